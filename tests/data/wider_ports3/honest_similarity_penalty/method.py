"""Crowd penalty: the closing queries' attention, minus how much each key resembles the rest of the cache on average
(a crowded key is worth less)."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class CrowdPenalty(EvictionMethod):
    name = "crowd_penalty"
    query_window = 16
    weight = 0.3

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention().sum(dim=1), "mean")
        unit = F.normalize(view.keys.float(), dim=-1)
        crowd = (unit @ unit.transpose(1, 2)).mean(dim=-1)
        score = att / att.amax(dim=-1, keepdim=True) - self.weight * crowd
        return Keep.from_topk(score, view.budget, view.valid)
