import torch

from harness.api import EvictionMethod, Keep, LayerView


class QuietKeys(EvictionMethod):
    name = "quiet_keys"

    def select(self, view: LayerView) -> Keep:
        mag = torch.linalg.vector_norm(view.keys, dim=-1)
        if view.valid is not None:
            mag = mag.masked_fill(~view.valid, float("inf"))
        k = min(view.budget, view.n_tokens)
        return Keep(tuple(mag.topk(k, dim=-1, largest=False).indices.sort(dim=-1).values))
