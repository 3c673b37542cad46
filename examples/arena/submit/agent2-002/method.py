"""SpanVote: each question query votes for its top keys (Borda count), and votes spread to neighbours.

Summed attention lets one sharp query dominate; a vote gives every question token the same say. Each
query head's question queries rank the context, the top ``votes_per_query`` keys get Borda points, votes
are summed over the query heads of a KV head, and a max-pool spreads a token's votes to +-``span``
neighbours so that kept tokens form readable spans rather than isolated fragments.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SpanVote(EvictionMethod):
    name = "spanvote"
    question_queries = True
    query_window = 8
    votes_per_query = 16
    span = 2
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        attn = view.attention()  # (H_q, N, T)
        h_q, n_q, n = attn.shape
        k = min(self.votes_per_query, n)
        top = attn.topk(k, dim=-1).indices  # (H_q, N, k)
        points = torch.arange(k, 0, -1, dtype=torch.float32).expand(h_q, n_q, k)
        votes = torch.zeros(h_q, n).scatter_add_(1, top.reshape(h_q, -1), points.reshape(h_q, -1))
        votes = view.group(votes, "sum")  # (H_kv, T)
        spread = F.max_pool1d(votes[:, None, :], 2 * self.span + 1, stride=1, padding=self.span)[:, 0, :]
        mass = view.group(attn.sum(dim=1), "mean")  # breaks ties between unvoted tokens
        score = votes + 0.5 * spread + mass
        score[:, : self.n_sink] = float("inf")
        if view.query_positions is not None:
            score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, valid)
