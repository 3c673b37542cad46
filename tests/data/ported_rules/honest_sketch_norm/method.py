"""Trust-weighted window attention: the window's exact attention, damped where a cheap binary sketch of the keys
disagrees with it (a token whose exact score the sketch cannot confirm is a fragile one), with an entropy-scaled
margin per head."""

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


class TrustWeighted(EvictionMethod):
    name = "trust_weighted"
    query_window = 32
    width = 64

    def select(self, view: LayerView) -> Keep:
        gen = torch.Generator().manual_seed(3)
        proj = torch.randn(view.keys.shape[-1], self.width, generator=gen)
        exact = view.group(view.attention(), "mean")                 # (H, N, T)
        q = view.group(view.queries.float(), "mean")                 # (H, N, d)
        bits = torch.sign(view.keys.float() @ proj)                  # (H, T, m)
        guess = torch.softmax((q @ proj) @ bits.transpose(1, 2) / self.width, dim=-1)
        spread = -(exact * torch.log(exact + 1e-9)).sum(-1, keepdim=True) / math.log(exact.shape[-1])
        trust = 1.0 - (exact - guess).abs() * spread
        return Keep.from_topk((exact * trust).sum(1), view.budget, view.valid)
