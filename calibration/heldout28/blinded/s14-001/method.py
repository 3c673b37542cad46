"""Head Ballot: fuse the query heads' rankings instead of averaging their attention.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) as used on a query-aware board: tokens are scored by the
attention the question's queries pay them. SnapKV (and this harness's group reduction) averages the attention of
the query heads that share a KV head, so one head with a peaked distribution can dominate and a head that ranks a
token second everywhere counts for little. Here each query head ranks the tokens by its own summed attention, and
the KV head combines the rankings by reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009):
score = sum over its query heads of 1 / (60 + rank). Tokens several heads like moderately beat tokens one head
likes alone. Ada-KV (Feng et al., 2024, arXiv 2407.11550) also argues heads differ, but reallocates budget;
this keeps a uniform budget and only changes the aggregation. The question span and 4 sinks are kept.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class HeadBallot(EvictionMethod):
    name = "head_ballot"
    question_queries = True
    query_window = 8
    rrf_k = 60.0
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        per_head = view.attention(reduce="sum")  # (H_q, T)
        pad = ~view.valid_mask().repeat_interleave(view.model.group_size, dim=0)
        per_head = per_head.masked_fill(pad, float("-inf"))
        rank = per_head.argsort(dim=-1, descending=True).argsort(dim=-1).float() + 1.0
        fused = view.group(1.0 / (self.rrf_k + rank), "sum")
        keep = (view.positions >= view.query_positions.min()) | (view.positions < self.n_sink)
        return Keep.from_topk(fused.masked_fill(keep, float("inf")), view.budget, view.valid)
