import torch

from harness.api import EvictionMethod, Keep, LayerView


class EdgeKeeper(EvictionMethod):
    name = "edge_keeper"
    lead = 4

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        assert n > self.lead, f"needs more than {self.lead} tokens"
        dropped = n - min(view.budget, n)
        s = torch.ones_like(view.keys[..., 0])
        s[:, self.lead : self.lead + dropped] = 0
        s = s + view.positions.float() * 1e-6
        return Keep.from_topk(s, view.budget, view.valid)
