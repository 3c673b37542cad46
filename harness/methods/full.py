"""The full cache: keeps everything. Every run's reference; the harness skips compression for it."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FullCache(EvictionMethod):
    name = "full"
    keeps_everything = True

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        return Keep(tuple(torch.nonzero(valid[h]).flatten() for h in range(view.n_kv_heads)))
