"""Shared thin keys: the keys of all heads of a layer, laid side by side, are reduced to a few shared latent
coordinates per token; the window queries score the keys rebuilt from those latents."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SharedThinKeys(EvictionMethod):
    name = "shared_thin_keys"
    query_window = 16
    rank = 32

    def _rebuilt(self, k: torch.Tensor) -> torch.Tensor:
        h, t, d = k.shape
        wide = k.float().permute(1, 0, 2).reshape(t, h * d)           # (T, H*D): every head's channels together
        u, s, vh = torch.linalg.svd(wide, full_matrices=False)
        r = min(self.rank, s.shape[0])
        latent = u[:, :r] * s[:r]                                       # the cached latents
        return (latent @ vh[:r]).reshape(t, h, d).permute(1, 0, 2)

    def select(self, view: LayerView) -> Keep:
        keys = self._rebuilt(view.keys)
        h, t, d = keys.shape
        q = view.queries.float().reshape(h, -1, d)
        w = torch.softmax(torch.bmm(q, keys.transpose(1, 2)) * view.model.scale, dim=-1)
        return Keep.from_topk(w.sum(dim=1), view.budget, view.valid)
