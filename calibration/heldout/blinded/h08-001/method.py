import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        received = view.group(view.attention(reduce="sum"), "sum")
        magnitude = view.values.float().norm(p=1, dim=-1)
        return Keep.from_topk(received * magnitude, view.budget, view.valid)
