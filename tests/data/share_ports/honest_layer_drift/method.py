import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Drift(EvictionMethod):
    def setup(self, model):
        self.below = None

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        below, self.below = self.below, k
        if below is None or below.shape != k.shape:
            return Keep.from_topk(-k.norm(dim=-1), view.budget, view.valid)
        turn = 1 - F.cosine_similarity(k, below, dim=-1)
        return Keep.from_topk(turn, view.budget, view.valid)
