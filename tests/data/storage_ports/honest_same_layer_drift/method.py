"""Decode-time drift: at every call a layer compares its current keys with the keys it held at its own previous call
(kept by layer), and the tokens whose keys are least like anything it held before get a bonus on top of the last
query's attention."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class OwnDrift(EvictionMethod):
    name = "own_drift"
    query_window = 1

    def setup(self, model) -> None:
        self.held = {}

    def select(self, view: LayerView) -> Keep:
        k = F.normalize(view.keys.float(), dim=-1)
        before = self.held.get(view.layer)
        self.held[view.layer] = k
        att = view.group(view.attention(), "mean")[:, -1]
        if before is None:
            return Keep.from_topk(att, view.budget, view.valid)
        novel = 1.0 - torch.einsum("htd,hsd->hts", k, F.normalize(before, dim=-1)).amax(-1)
        return Keep.from_topk(att + 0.05 * novel, view.budget, view.valid)
