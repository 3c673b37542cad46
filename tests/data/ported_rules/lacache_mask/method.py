import torch
from harness.api import EvictionMethod, Keep, LayerView


class Ladder(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        pos = view.positions.float()
        n = view.n_tokens
        frac = view.layer / max(view.model.n_layers - 1, 1)
        start = 4 + frac * (n - view.budget)
        inside = (pos >= start) & (pos < start + view.budget - 36)
        s = inside.float() + (pos < 4).float() * 2 + (pos >= n - 32).float() * 2
        return Keep.from_topk(s, view.budget, view.valid)
