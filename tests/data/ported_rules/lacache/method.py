"""Staircase retention: the stack of layers shares the context out between them; each layer holds one stretch of
it, the stretch stepping forward layer by layer, plus the first and the newest tokens."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Staircase(EvictionMethod):
    name = "staircase"
    anchors = 4
    tail = 32

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        span = max(view.budget - self.anchors - self.tail, 1)
        room = max(n - self.anchors - self.tail - span, 0)
        step = room / max(view.model.n_layers - 1, 1)
        lo = self.anchors + int(round(step * view.layer))
        idx = torch.cat([torch.arange(self.anchors), torch.arange(lo, min(lo + span, n)),
                         torch.arange(max(n - self.tail, 0), n)]).unique()
        return Keep.same_for_all_heads(idx[: view.budget], view.n_kv_heads)
