"""Odd and loud: a key far from the layer's mean key is unusual and worth keeping, and a long value weighs more;
the two multiplied, the newest tokens kept."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class OddLoud(EvictionMethod):
    name = "odd_loud"
    tail = 32

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        centre = k.mean(dim=1, keepdim=True)
        odd = 1.0 - F.cosine_similarity(k, centre, dim=-1)
        loud = view.values.float().norm(dim=-1)
        score = odd * loud
        score[:, -self.tail:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
