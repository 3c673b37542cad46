"""Fragility-aware retention: window attention, plus a bonus for tokens whose keys survive coarse rounding worst
(their exact values matter most if the cache were ever compressed further)."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Fragility(EvictionMethod):
    name = "fragility"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        step = k.abs().amax(dim=-1, keepdim=True) / 2
        coarse = torch.round(k / step) * step
        err = torch.linalg.vector_norm(k - coarse, dim=-1)
        att = view.group(view.attention(), "mean").sum(1)
        score = att / att.sum(-1, keepdim=True) + 0.1 * err / err.sum(-1, keepdim=True)
        return Keep.from_topk(score, view.budget, view.valid)
