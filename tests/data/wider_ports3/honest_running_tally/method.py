"""Piecewise tally: the prompt's queries are read in slices; each slice's attention is added to a running tally per
token, and the tally keeps the best tokens beside the newest."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PiecewiseTally(EvictionMethod):
    name = "piecewise_tally"
    query_window = 1 << 20
    piece = 128
    tail = 32

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()
        k = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        tally = torch.zeros(q.shape[0], k.shape[1])
        for s in range(0, q.shape[1], self.piece):
            part = torch.softmax(q[:, s:s + self.piece] @ k.transpose(1, 2) * view.model.scale, dim=-1)
            tally = tally + part.sum(dim=1)
        tally = view.group(tally, "sum")
        tally[:, -self.tail:] = float("inf")
        return Keep.from_topk(tally, view.budget, view.valid)
