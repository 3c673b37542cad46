"""Row-ballot retention (board A, question-aware prefill).

A summed attention score lets one row's strong preference outweigh what many rows agree on. We hold a ballot
instead: every question row (the question span and the closing 4 rows, causal) names its 48 highest-scoring keys,
in every query head of the KV head's group. A token's standing is the number of ballots that name it; ties are
broken by the attention it receives, summed over the rows and the group. The question span and the 4 opening tokens
are always kept, then the tokens with the best standing.

When the budget is no larger than one ballot (48 tokens), a ballot no longer separates anything: every row's list
already covers the whole budget. In that regime we keep the opening tokens and the newest tokens (the question and
what precedes it).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RowBallot(EvictionMethod):
    name = "row_ballot"
    question_queries = True
    query_window = 4
    ballot = 48
    opening = 4

    def _newest(self, view: LayerView) -> Keep:
        score = view.positions.float().masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.budget <= self.ballot:
            return self._newest(view)
        attn = view.attention()  # (H_q, N, T), causal
        g = view.model.group_size
        h_kv, t = view.n_kv_heads, view.n_tokens
        k = min(self.ballot, t)
        named = torch.zeros_like(attn).scatter_(-1, attn.topk(k, dim=-1).indices, 1.0)
        named = named * (attn > 0)  # a row cannot name a key it does not see
        votes = named.sum(dim=1).view(h_kv, g, t).sum(dim=1)
        mass = attn.sum(dim=1).view(h_kv, g, t).sum(dim=1)
        standing = votes + mass / (mass.amax(dim=-1, keepdim=True) + 1e-6) * 0.5
        fixed = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(standing.masked_fill(fixed, float("inf")), view.budget, view.valid)
