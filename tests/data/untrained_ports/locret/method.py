"""Peak-held retention: the prompt is read chunk by chunk into a store of fixed size; each token held keeps the
highest weight any query of a later chunk has put on it so far, and the store is cut back to its size after every
chunk."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PeakHeld(EvictionMethod):
    name = "peak_held"
    query_window = 1 << 16
    piece = 256

    def _probs(self, view: LayerView, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        k = view.keys[:, cols].float()
        q = view.queries[:, rows].float().reshape(view.n_kv_heads, g * rows.numel(), k.shape[-1])
        return torch.softmax(q @ k.transpose(1, 2) * view.model.scale, dim=-1)

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        cap = view.budget
        held = torch.zeros(0, dtype=torch.long)
        peak = torch.zeros(0)
        for lo in range(0, n, self.piece):
            fresh = torch.arange(lo, min(lo + self.piece, n))
            held = torch.cat([held, fresh])
            peak = torch.cat([peak, torch.zeros(fresh.numel())])
            w = self._probs(view, fresh, held).amax(dim=1).mean(0)
            peak = torch.maximum(peak, w)
            if held.numel() > cap:
                top = peak.topk(cap).indices.sort().values
                held, peak = held[top], peak[top]
        return Keep.same_for_all_heads(held, view.n_kv_heads)
