import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class KeyDiffPort(EvictionMethod):
    """KeyDiff (Park et al., 2025, arXiv 2504.15364), ported to the harness: keys least similar to the mean key."""

    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float()
        mean_key = keys.mean(dim=1, keepdim=True)
        similarity = F.cosine_similarity(keys, mean_key, dim=-1)
        return Keep.from_topk(-similarity, view.budget, view.valid)
