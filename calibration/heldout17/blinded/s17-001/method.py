"""Outlier-bearing retention (board B_online, query-agnostic prefill).

Without the question, the safest tokens to keep are the ones that are hard to stand in for. Keys that point the same
way as the bulk of the context are interchangeable: dropping a few of them barely changes any future attention row.
Keys that point away from the bulk carry what nothing else can. We rank every key by how far its bearing is from the
context's anchor bearing, 1 - cos(k_j, anchor), and keep the most divergent ones. The closing 32 context rows are
always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _anchor(keys: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """(H_kv, T, D), (H_kv, T) -> (H_kv, D): the context's anchor bearing per KV head."""
    w = real.float()[..., None]
    return (keys * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)


class OutlierBearing(EvictionMethod):
    name = "outlier_bearing"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        keys = view.keys.float()
        anchor = _anchor(keys, view.valid_mask())
        divergence = 1.0 - F.cosine_similarity(keys, anchor[:, None, :], dim=-1)  # (H_kv, T)
        if view.query_positions is not None:
            divergence = divergence.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(divergence, view.budget, view.valid)
