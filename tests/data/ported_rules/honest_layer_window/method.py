"""Depth-widening window: pooled window attention (SnapKV's scoring) while the protected recent window widens
with depth (deeper layers attend more locally), and the first tokens always stay."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class DepthWidening(EvictionMethod):
    name = "depth_widening"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(), "mean").sum(1)
        s = F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]
        n = view.n_tokens
        wide = 16 + 4 * view.layer
        pos = torch.arange(n)
        s = torch.where(pos >= n - wide, torch.full_like(s, float("inf")), s)
        s[:, :4] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
