import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 32
    gamma = 200.0

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention()                        # (H_q, W, T)
        centre = a.mean(dim=1)
        spread = a.var(dim=1)
        s = view.group(centre + self.gamma * spread, "mean")
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
