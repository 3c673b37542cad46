import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        weights = view.attention()                     # (H_q, W, T)
        seen = (view.positions[0] <= view.query_positions.max()).sum().clamp(min=1)
        bar = 1.0 / seen.float()
        pivotal = (weights > bar).float()              # above-average attention, query by query
        tally = view.group(pivotal.sum(dim=1), "sum")  # how often each token was pivotal in the history window
        return Keep.from_topk(tally, view.budget, view.valid)
