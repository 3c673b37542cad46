import torch

from harness.api import EvictionMethod, Keep, LayerView


class SmallFirst(EvictionMethod):
    name = "small_first"
    untouched = (0, 1)

    def select(self, view: LayerView) -> Keep:
        if view.layer in self.untouched or view.n_tokens <= view.budget:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        token_norms = torch.norm(view.keys, p=2, dim=-1)
        if view.valid is not None:
            token_norms = token_norms.masked_fill(~view.valid, float("inf"))
        order = token_norms.argsort(dim=-1)
        return Keep(tuple(order[:, : view.budget].sort(dim=-1).values))
