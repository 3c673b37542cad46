"""Outlier Keys: keep the keys that stand apart from the layer's typical key, no attention needed."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class OutlierKeys(EvictionMethod):
    name = "outlier_keys"

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        if view.valid is not None:
            w = view.valid.float().unsqueeze(-1)
            centre = (k * w).sum(1, keepdim=True) / w.sum(1, keepdim=True).clamp_min(1)
        else:
            centre = k.mean(dim=1, keepdim=True)
        sameness = F.cosine_similarity(k, centre.expand_as(k), dim=-1)     # (H_kv, T)
        return Keep.from_topk(-sameness, view.budget, view.valid)
