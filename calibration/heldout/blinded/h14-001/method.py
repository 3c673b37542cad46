import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 16
    slope = 0.5

    def layer_budgets(self, mean_budget, n_tokens, model):
        layers = model.n_layers
        top = mean_budget * (1 + self.slope)
        bottom = mean_budget * (1 - self.slope)
        step = (top - bottom) / max(1, layers - 1)
        return [int(min(n_tokens, top - i * step)) for i in range(layers)]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        consensus = view.group(view.attention().sum(dim=1), "mean")
        consensus = consensus.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(consensus, view.budget, view.valid)
