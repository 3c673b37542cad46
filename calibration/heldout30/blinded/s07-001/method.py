"""Odd One Out: keep what stands apart from the crowd, without reading any attention.

The context is walked in blocks of 256 tokens, as it would arrive in a chunked prefill. After each block the
head's current holdings (what it kept so far plus the new block) are compared with their own centre, the
normalised mean of their unit keys; the entries whose keys point most nearly the same way as that centre are the
ones the head can best do without, and only the budget's worth of the most outlying entries stays. No query is
needed, so the same keep set serves every question that comes later.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(1e-6)


class OddOneOut(EvictionMethod):
    name = "odd_one_out"
    block = 256

    def _head(self, keys: torch.Tensor, keep: int) -> torch.Tensor:
        """Indices (ascending) of the ``keep`` entries of one head that stay, block by block."""
        n = keys.shape[0]
        unit = _unit(keys.float())
        held = torch.empty(0, dtype=torch.long, device=keys.device)
        for start in range(0, n, self.block):
            held = torch.cat([held, torch.arange(start, min(n, start + self.block), device=keys.device)])
            if held.numel() <= keep:
                continue
            centre = _unit(unit[held].mean(dim=0))
            alike = unit[held] @ centre
            held = held[alike.topk(keep, largest=False).indices].sort().values
        return held

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            keep = min(view.budget, idx.numel())
            out.append(idx[self._head(view.keys[h, idx], keep)])
        return Keep(tuple(out))
