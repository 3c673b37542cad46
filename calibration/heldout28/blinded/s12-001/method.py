"""Compass Keys: one bearing per query head, and the keys that lie along it.

The context's closing queries of a head mostly point the same way. That bearing is read off the queries as
their leading singular direction (signed so that the queries sit on its positive side), and each key is scored
by how far it reaches along the bearings of its KV head's query heads (the projections averaged). No attention
matrix is formed. The closing rows' own entries stay.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _bearings(queries: torch.Tensor) -> torch.Tensor:
    """(H_q, N, D) -> (H_q, D) unit leading right-singular vectors, oriented along the mean query."""
    q = queries.float()
    _, _, vh = torch.linalg.svd(q, full_matrices=False)
    lead = vh[:, 0, :]
    sign = torch.sign(torch.einsum("hnd,hd->h", q, lead))
    return lead * torch.where(sign == 0, torch.ones_like(sign), sign)[:, None]


class CompassKeys(EvictionMethod):
    name = "compass_keys"
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        bearing = _bearings(view.queries).unflatten(0, (view.n_kv_heads, view.model.group_size))
        reach = torch.einsum("htd,hgd->ht", view.keys.float(), bearing) / view.model.group_size
        closing = view.positions >= view.query_positions.min()
        return Keep.from_topk(reach.masked_fill(closing, float("inf")), view.budget, view.valid)
