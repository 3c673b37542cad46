"""Fragile-token guard: window attention, plus a bonus for tokens whose keys a coarse integer code fits worst (their
exact values would matter most if the cache were compressed further)."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FragileGuard(EvictionMethod):
    name = "fragile_guard"
    query_window = 32
    weight = 0.1

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        step = k.abs().amax(dim=-1, keepdim=True).clamp_min(1e-6) / 4
        miss = k - (k / step).long().float() * step
        err = miss.norm(dim=-1)
        att = view.group(view.attention(), "mean").sum(1)
        s = att / att.sum(-1, keepdim=True) + self.weight * err / err.sum(-1, keepdim=True)
        return Keep.from_topk(s, view.budget, view.valid)
