"""Spread thin: the closing queries' pull gives each token a first score; each time a few winners are taken, tokens
that look like them lose part of their score, so the kept set covers more ground."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class SpreadThin(EvictionMethod):
    name = "spread_thin"
    query_window = 16
    passes = 3
    neighbours = 8
    damp = 0.6

    def select(self, view: LayerView) -> Keep:
        pull = view.group(view.attention().sum(dim=1), "mean")
        pull = F.max_pool1d(pull[:, None], kernel_size=5, stride=1, padding=2)[:, 0]
        unit = F.normalize(view.keys.float(), dim=-1)
        alike = torch.einsum("htd,hsd->hts", unit, unit)
        take = max(1, view.budget // (2 * self.passes))
        for _ in range(self.passes):
            winners = pull.topk(take, dim=-1).indices
            for h in range(pull.shape[0]):
                close = alike[h, winners[h]].topk(self.neighbours, dim=-1).indices.flatten()
                pull[h, close] *= self.damp
        return Keep.from_topk(pull, view.budget, view.valid)
