"""Lasting tokens: every token gets a persistence rate in (0, 1) from its own key and value; the rate compounds over
the token's age, so a token with a low rate fades fast and one with a high rate lasts. The most lasting are kept."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LastingTokens(EvictionMethod):
    name = "lasting_tokens"
    slope = 4.0

    def _rate(self, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        d = k.shape[-1]
        strength = (k.norm(dim=-1) * v.norm(dim=-1)) / d
        return torch.sigmoid(self.slope * (strength - strength.mean(dim=-1, keepdim=True)))

    def select(self, view: LayerView) -> Keep:
        rate = self._rate(view.keys.float(), view.values.float())
        now = view.positions.max(dim=-1, keepdim=True).values
        age = (now - view.positions).float()
        lasting = rate ** age
        return Keep.from_topk(lasting, view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        return self.select(view)
