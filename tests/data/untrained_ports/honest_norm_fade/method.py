"""Fading small keys: the key-norm ranking (small keys are the attended ones) with a fixed fade per step of age, so
that old tokens need a much smaller key to stay; the fade is one constant for every token."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FadingSmallKeys(EvictionMethod):
    name = "fading_small_keys"
    fade = 0.995

    def select(self, view: LayerView) -> Keep:
        small = -view.keys.float().norm(dim=-1)
        age = (view.positions[:, -1:] - view.positions).float()
        s = small.exp() * self.fade ** age
        return Keep.from_topk(s, view.budget, view.valid)
