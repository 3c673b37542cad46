"""Value drift across depth: each layer's values are kept by layer index; a layer ranks its tokens by how far their
value directions moved from the layer before, magnitude aside."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class ValueDrift(EvictionMethod):
    name = "value_drift"
    n_first = 4

    def setup(self, model) -> None:
        self.kept = {}

    def select(self, view: LayerView) -> Keep:
        v = view.values.float()
        self.kept[view.layer] = v
        prev = self.kept.get(view.layer - 1)
        if prev is None or prev.shape != v.shape:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        drift = 1.0 - F.cosine_similarity(v, prev, dim=-1)
        drift[:, : self.n_first] = float("inf")
        return Keep.from_topk(drift, view.budget, view.valid)
