"""Spot check: a random handful of the prompt's queries is enough to see which keys matter; the fewest keys that
hold most of their attention are kept, beside the newest stretch."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SpotCheck(EvictionMethod):
    name = "spot_check"
    query_window = 1 << 20
    fraction = 0.125
    mass = 0.95
    local = 64

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()
        pick = torch.randperm(q.shape[1])[: max(1, int(q.shape[1] * self.fraction))]
        k = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        col = torch.softmax(q[:, pick] @ k.transpose(1, 2) * view.model.scale, dim=-1).sum(dim=1)
        col = view.group(col, "sum")
        top, where = col.sort(dim=-1, descending=True)
        reach = top.cumsum(dim=-1) / top.sum(dim=-1, keepdim=True)
        count = (reach < self.mass).sum(dim=-1) + 1
        score = torch.zeros_like(col)
        for h in range(col.shape[0]):
            score[h, where[h, : int(count[h])]] = 1.0 + col[h, where[h, : int(count[h])]]
        score[:, -self.local:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
