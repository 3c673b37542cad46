import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 32
    kernel = 7
    steep = 20

    def layer_budgets(self, mean_budget, n_tokens, model):
        depth = len(model.attention_layers)
        win = min(self.query_window, mean_budget)
        usable = mean_budget - win
        low = usable / self.steep
        high = 2 * usable - low
        if high >= n_tokens - win:
            high = n_tokens - win
            low = 2 * usable - high
        drop = (high - low) / max(1, depth - 1)
        return [int(win + high - i * drop) for i in range(depth)]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.group(view.attention().sum(dim=1), "mean")
        a = F.max_pool1d(a[:, None, :], self.kernel, stride=1, padding=self.kernel // 2)[:, 0, :]
        a = a.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(a, view.budget, view.valid)
