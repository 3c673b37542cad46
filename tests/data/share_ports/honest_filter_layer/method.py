import torch

from harness.api import EvictionMethod, Keep, LayerView


class Filter(EvictionMethod):
    query_window = 1

    def setup(self, model):
        self.picked = None

    def select(self, view: LayerView) -> Keep:
        if view.layer >= 13 and self.picked is not None:
            return Keep(self.picked)
        att = view.group(view.attention(reduce="sum"), "mean").mean(dim=0, keepdim=True)
        pick = att.topk(min(view.budget, att.shape[-1]), dim=-1).indices.expand(view.n_kv_heads, -1)
        self.picked = pick
        return Keep(pick)
