"""Compass: one bearing per head, no attention map at all.

Queries of a head do not point everywhere: they lean along one dominant bearing. Fit that bearing per KV head from
the context's closing queries (the top right-singular vector of the group's stacked queries, turned so the queries
lie on its positive side) and rank every key by how far it reaches along it; keys far along the bearing are the
ones future queries will pull hardest. The closing 32 positions are kept as they are.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class Compass(EvictionMethod):
    name = "compass"
    query_window = 64
    tail = 32

    def _bearing(self, q: torch.Tensor) -> torch.Tensor:
        """q (M, D) -> unit bearing (D,) with the queries on its positive side."""
        _, _, vh = torch.linalg.svd(q, full_matrices=False)
        axis = vh[0]
        side = torch.sign((q @ axis).mean())
        return axis * (side if side != 0 else 1.0)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        d = view.keys.shape[-1]
        stacked = view.queries.float().reshape(view.n_kv_heads, -1, d)      # (H_kv, g * W, D)
        axes = torch.stack([self._bearing(stacked[h]) for h in range(view.n_kv_heads)])
        reach = torch.einsum("htd,hd->ht", view.keys.float(), axes)
        newest = view.positions >= view.query_positions.max() - self.tail + 1
        return Keep.from_topk(reach.masked_fill(newest, float("inf")), view.budget, view.valid)
