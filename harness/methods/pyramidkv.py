"""PyramidKV (Cai et al., 2024, arXiv 2406.02069): SnapKV's scores with a linearly decreasing per-layer
budget, the bottom layer getting the most and the mean preserved; beta = 20 sets the slope (over the attention
layers only, on a hybrid model). The schedule follows the official KVCache-Factory code (min = (C - w) / beta,
max = 2 (C - w) - min, clipped to the prefix length); scoring uses this package's SnapKV defaults."""

from harness.api import ModelInfo
from harness.methods.snapkv import SnapKV


class PyramidKV(SnapKV):
    name = "pyramidkv"
    beta = 20
    # False: the official schedule (the window is part of C). True: kvpress's re-derivation (C = w + n(1 - r),
    # rounded budgets, uniform SnapKV when the pyramid is infeasible), used by bench/kvpress_parity.py.
    kvpress_schedule = False

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        w = min(self.query_window, mean_budget)
        c = mean_budget if self.kvpress_schedule else mean_budget - w
        n_layers = len(model.attention_layers)  # the layers that hold a KV cache (a hybrid's other layers do not)
        min_num = c / self.beta
        max_num = 2 * c - min_num
        if max_num >= n_tokens - w:
            max_num = n_tokens - w
            min_num = 2 * c - max_num
        step = (max_num - min_num) / max(1, n_layers - 1)
        if self.kvpress_schedule:
            if not n_tokens >= max_num >= min_num >= self.query_window:
                return None  # kvpress falls back to a uniform budget
            budgets = [round(max_num - layer * step) for layer in range(n_layers)]
            for layer in reversed(range(n_layers)):  # rounding may overspend by a few tokens: take them from the top
                if sum(budgets) <= mean_budget * n_layers:
                    break
                budgets[layer] -= 1
        else:
            budgets = [int(max_num - layer * step) + w for layer in range(n_layers)]
        return [max(1, min(b, n_tokens)) for b in budgets]
