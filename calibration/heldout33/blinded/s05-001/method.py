"""Lookback Focus: the newest reasoning steps decide which older tokens stay."""

import torch

from harness import EvictionMethod, Keep, LayerView


class LookbackFocus(EvictionMethod):
    name = "lookback_focus"
    query_window = 48
    span = 48

    def select(self, view: LayerView) -> Keep:
        mask = view.valid_mask()
        pos = view.positions.masked_fill(~mask, -1)
        top = pos.max(dim=1, keepdim=True).values
        young = (pos > top - self.span) & mask
        if view.queries is None:
            return Keep.from_topk(pos.float(), view.budget, view.valid)
        a = view.attention()                                  # (Hq, w, T)
        s = view.group(a.max(dim=1).values, "max")            # strongest look any recent step gave
        s = s.masked_fill(young, float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
