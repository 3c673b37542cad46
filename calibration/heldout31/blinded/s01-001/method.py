"""Rank Vote: the closing rows vote by rank, not by mass.

On board B the question is unknown, so the context's own closing 48 rows stand in for it. Summing their attention
lets a few very peaked rows decide everything; here each row instead ranks the tokens it can see and gives every
token 1 / (60 + rank), reciprocal-rank fusion, so a token many rows place high beats a token one row adores. Votes
are summed over the rows and the query heads of each KV head; the 48 rows themselves and the first 4 tokens are
kept. Builds on SnapKV's observation window (Li et al., 2024) and StreamingLLM's sinks (Xiao et al., 2023);
reciprocal-rank fusion is Cormack et al. (2009); using it to aggregate window rows is the new part.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RankVote(EvictionMethod):
    name = "rank_vote"
    query_window = 48
    fuse_k = 60.0
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                          # (H_q, W, T) causal
        seen = (view.positions[:, None, :] <= view.query_positions[None, :, None])    # (H_kv, W, T)
        seen = seen & view.valid_mask()[:, None, :]
        seen = seen.repeat_interleave(view.model.group_size, dim=0)
        order = attn.masked_fill(~seen, -1.0).argsort(dim=-1, descending=True)
        rank = torch.empty_like(order)
        rank.scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order))
        votes = (1.0 / (self.fuse_k + rank.float() + 1.0)) * seen
        scores = view.group(votes.sum(dim=1), "sum")
        fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.sinks)
        return Keep.from_topk(scores.masked_fill(fixed, float("inf")), view.budget, view.valid)
