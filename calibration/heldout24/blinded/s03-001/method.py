"""Spanning-set cache (board B_online, query-agnostic prefill).

Without the question, keep the tokens the cache cannot do without: the ones whose keys and whose values
stretch the space the rest of the layer lives in. A token that lies in directions nobody else covers is
irreplaceable; a token that many neighbours already span can go. Sinks and a short recent tail stay.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


def _reach(mat: np.ndarray, rank: int, rng: np.random.Generator) -> np.ndarray:
    """How much each row of ``mat`` (T, D) stands on its own: squared row norms of an orthonormal basis of a
    random sketch of the column space."""
    sketch = mat @ rng.standard_normal((mat.shape[1], rank)) / np.sqrt(rank)
    basis, _ = np.linalg.qr(sketch)
    return np.einsum("td,td->t", basis, basis)


class SpanningSetCache(EvictionMethod):
    name = "spanning_set_cache"
    sketch_rank = 24
    sinks = 4
    tail = 16
    seed = 7

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rng = np.random.default_rng(self.seed + view.layer)
        ok = view.valid_mask()
        scores = torch.full(view.keys.shape[:2], float("-inf"))
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten().cpu()
            keys = view.keys[h, idx].float().cpu().numpy()
            vals = view.values[h, idx].float().cpu().numpy()
            rank = min(self.sketch_rank, keys.shape[0], keys.shape[1])
            lev = _reach(keys - keys.mean(0), rank, rng) * _reach(vals, rank, rng)
            pos = view.positions[h, idx].cpu()
            bump = (pos < self.sinks) | (pos > pos.max() - self.tail)
            s = torch.from_numpy(lev).float().masked_fill(bump, float("inf"))
            scores[h, idx] = s
        return Keep.from_topk(scores.to(view.keys.device), view.budget, view.valid)
