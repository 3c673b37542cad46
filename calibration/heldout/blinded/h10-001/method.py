import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        length = torch.linalg.vector_norm(view.keys.float(), dim=-1)
        return Keep.from_topk(-length, view.budget, view.valid)
