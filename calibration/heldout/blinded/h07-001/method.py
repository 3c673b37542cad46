import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 1 << 20
    forget = 0.98

    def select(self, view: LayerView) -> Keep:
        total = view.recall("mem")
        if view.queries is not None:
            fresh = view.group(view.attention(reduce="sum"), "sum")
            total = total * 0.98 + fresh
        view.remember("mem", total)
        return Keep.from_topk(total, view.budget, view.valid)
