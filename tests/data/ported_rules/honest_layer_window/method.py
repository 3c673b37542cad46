"""Rotating-stretch window attention: pooled window attention (SnapKV's scoring) ranks the tokens, while one
stretch of the middle of the context, stepping forward with depth, is protected so that the stack as a whole never
loses a region entirely; the first tokens always stay."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class RotatingStretch(EvictionMethod):
    name = "rotating_stretch"
    query_window = 32
    stretch = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(), "mean").sum(1)
        s = F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]
        n = view.n_tokens
        start = 4 + (view.layer * self.stretch) % max(n - 4 - self.stretch, 1)
        guard = torch.arange(start, min(start + self.stretch, n))
        s[:, guard] = float("inf")
        s[:, :4] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
