"""Hedged Window: observation-window attention, flattened by a square root, max-pooled, window kept."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class HedgedWindow(EvictionMethod):
    name = "hedged_window"
    query_window = 24
    kernel = 3
    power = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        mass = view.attention(reduce="sum")                        # (H_q, T)
        mass = mass.pow(self.power)                                # flatten the head of the distribution
        mass = view.group(mass, "mean")
        mass = F.max_pool1d(mass[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        mass = mass.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(mass, view.budget, view.valid)
