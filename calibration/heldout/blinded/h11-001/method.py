import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 1 << 20
    keep_last = 0.5

    def _gather(self, view: LayerView) -> torch.Tensor:
        running = view.recall("centres")
        if view.queries is not None:
            running = running + view.group(view.attention(reduce="sum"), "sum")
        view.remember("centres", running)
        return running

    def select(self, view: LayerView) -> Keep:
        s = self._gather(view)
        w = int(view.budget * self.keep_last)
        n = view.n_tokens
        s[:, n - w:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
