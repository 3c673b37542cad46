"""Spread-out novelty: keys pass through a fixed random orthogonal turn so that no feature dominates, and a token is
kept when its turned key is far from the mean turned key, weighted by the window attention."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SpreadNovelty(EvictionMethod):
    name = "spread_novelty"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        d = view.keys.shape[-1]
        turn, _ = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(0)))
        k = view.keys.float() @ turn
        far = (k - k.mean(dim=1, keepdim=True)).norm(dim=-1)
        att = view.group(view.attention(), "mean").sum(1)
        return Keep.from_topk(att * far, view.budget, view.valid)
