import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 1 << 20
    fresh = 0.5

    def _tally(self, view: LayerView) -> torch.Tensor:
        book = view.recall("book")
        if view.queries is not None:
            g = view.model.group_size
            got = view.attention(reduce="sum")                     # (H_q, T)
            for kv in range(view.n_kv_heads):
                book[kv] += got[kv * g:(kv + 1) * g].sum(dim=0)
        view.remember("book", book)
        return book

    def select(self, view: LayerView) -> Keep:
        s = self._tally(view).clone()
        tail = int(view.budget * self.fresh)
        if tail:
            s[:, -tail:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
