import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    anchors = 4

    def select(self, view: LayerView) -> Keep:
        n, b = view.n_tokens, view.budget
        order = torch.zeros(view.n_kv_heads, n)
        order[:, : self.anchors] = 2.0
        order[:, max(self.anchors, n - (b - self.anchors)):] = 1.0
        return Keep.from_topk(order, b, view.valid)
