"""Per-channel whitening: every key channel is divided by its spread over the tokens (its energy), so that no channel
dominates, and the window queries' attention on the whitened keys ranks the tokens; no channel is dropped."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class WhitenedKeys(EvictionMethod):
    name = "whitened_keys"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        energy = k.pow(2).mean(dim=-2, keepdim=True).sqrt().clamp_min(1e-6)
        q = view.queries.float().reshape(view.n_kv_heads, -1, k.shape[-1])
        s = torch.softmax(q @ (k / energy).transpose(1, 2), dim=-1).sum(1)
        return Keep.from_topk(s, view.budget, view.valid)
