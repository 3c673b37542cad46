"""Uniform random retention (a control): every token is equally likely to stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LuckyDraw(EvictionMethod):
    name = "lucky_draw"

    def select(self, view: LayerView) -> Keep:
        g = torch.Generator().manual_seed(1234 + view.layer)
        return Keep.from_topk(torch.rand(view.keys.shape[:2], generator=g), view.budget, view.valid)
