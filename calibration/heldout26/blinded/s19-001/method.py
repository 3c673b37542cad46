"""Mass-breadth rank fusion (board A, query-aware prefill).

Two readings of the question's attention disagree in a useful way. *Mass* (attention summed over the question
rows, as in SnapKV) favours tokens one or two rows stare at; *breadth* (how many question rows, over the heads
of a group, put the token among their top few) favours tokens many rows touch a little. Neither scale is
comparable to the other, so they are fused by rank: reciprocal rank fusion, 1 / (k + rank), summed over the two
rankings. The newest prompt positions (the end of the question) and the first two tokens are kept outright
(at most a quarter of the budget each).
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Rank of every entry along the last axis, 0 = largest."""
    order = x.argsort(dim=-1, descending=True, stable=True)
    return torch.empty_like(order).scatter_(-1, order, torch.arange(x.shape[-1], device=x.device).expand_as(order))


class MassBreadthFusion(EvictionMethod):
    name = "mass_breadth_fusion"
    query_window = 8
    question_queries = True
    top_per_row = 8
    fusion_k = 60.0
    pinned_newest = 8
    pinned_first = 2

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                            # (H_q, N, T)
        mass = view.group(attn.sum(dim=1), "mean")                          # (H_kv, T)
        k = min(self.top_per_row, attn.shape[-1])
        hits = torch.zeros_like(attn).scatter_(-1, attn.topk(k, dim=-1).indices, 1.0)
        breadth = view.group(hits.sum(dim=1), "sum")                        # (H_kv, T)
        valid = view.valid_mask()
        mass = mass.masked_fill(~valid, -1.0)
        breadth = breadth.masked_fill(~valid, -1.0) + 1e-6 * mass            # ties in breadth broken by mass
        fused = 1.0 / (self.fusion_k + _ranks(mass).float()) + 1.0 / (self.fusion_k + _ranks(breadth).float())
        counts = valid.sum(dim=1)
        newest = min(self.pinned_newest, view.budget // 4)       # pins never take more than a quarter each
        first = min(self.pinned_first, view.budget // 4)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            fused[h, max(0, c - newest): c] = float("inf")
            fused[h, : min(first, c)] = float("inf")
        return Keep.from_topk(fused, view.budget, view.valid)
