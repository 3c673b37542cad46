"""Peak value pull: the closing queries' largest attention to each token, times the size of the token's value; the
largest products are kept."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PeakValuePull(EvictionMethod):
    name = "peak_value_pull"
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        peak = view.group(view.attention(reduce="max"), reduce="max")
        size = view.values.float().norm(dim=-1)
        return Keep.from_topk(peak * size, view.budget, view.valid)
