import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class OutlierValue(EvictionMethod):
    """Keys far from the mean key, weighted by how much their value would move the output (value norm)."""

    n_sinks = 4

    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float()
        centre = keys.mean(dim=1, keepdim=True)
        distinct = 1.0 - F.cosine_similarity(keys, centre, dim=-1)
        weight = view.values.float().norm(dim=-1)
        score = distinct * weight / weight.mean(dim=1, keepdim=True)
        score[:, : self.n_sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
