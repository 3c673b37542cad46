import torch

from harness.api import EvictionMethod, Keep, LayerView


class Lottery(EvictionMethod):
    name = "lottery"
    seed = 7

    def select(self, view: LayerView) -> Keep:
        gen = torch.Generator()
        gen.manual_seed(self.seed + view.layer)
        s = torch.rand(*view.keys.shape[:-1], generator=gen, dtype=view.keys.dtype)
        return Keep.from_topk(s, view.budget, view.valid)
