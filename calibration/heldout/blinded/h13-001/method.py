import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        newest = view.attention()[:, -1, :]               # (H_q, T)
        shared = newest.mean(dim=0)                       # one set for the whole layer
        return Keep.same_for_all_heads(shared.topk(min(view.budget, view.n_tokens)).indices.sort().values,
                                       view.n_kv_heads)
