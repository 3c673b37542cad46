"""Rolling reservoir: the context is read front to back in slices into a reservoir of fixed size; whenever a slice
overflows it, the closing queries' attention over the reservoir decides what stays, so every slice competes only with
what the earlier slices left behind."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class RollingReservoir(EvictionMethod):
    name = "rolling_reservoir"
    query_window = 16
    slice_len = 256

    def _weights(self, view: LayerView, idx: torch.Tensor) -> torch.Tensor:
        k = view.keys[:, idx].float()
        q = view.queries.float().reshape(view.n_kv_heads, -1, k.shape[-1])
        return torch.softmax(q @ k.transpose(1, 2) * view.model.scale, dim=-1).sum(1).mean(0)

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        room = view.budget
        reservoir = torch.zeros(0, dtype=torch.long)
        for start in range(0, n, self.slice_len):
            piece = torch.arange(start, min(start + self.slice_len, n))
            reservoir = torch.cat([reservoir, piece])
            if reservoir.numel() > room:
                w = self._weights(view, reservoir)
                reservoir = reservoir[w.topk(room).indices.sort().values]
        return Keep.same_for_all_heads(reservoir, view.n_kv_heads)
