"""Enough is enough: the closing queries' attention, and for each head only the fewest tokens that hold nine tenths of
it (the others ranked last)."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class EnoughIsEnough(EvictionMethod):
    name = "enough_is_enough"
    query_window = 32
    mass = 0.9

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention().sum(dim=1), "mean")
        ordered, _ = att.sort(dim=-1, descending=True)
        share = ordered.cumsum(dim=-1) / ordered.sum(dim=-1, keepdim=True)
        count = (share < self.mass).sum(dim=-1, keepdim=True)
        bar = ordered.gather(1, count.clamp(max=att.shape[-1] - 1))
        score = att + (att >= bar).float()
        return Keep.from_topk(score, view.budget, view.valid)
