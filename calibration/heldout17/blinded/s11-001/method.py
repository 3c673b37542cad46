"""Principal-bearing retention (board B_online, query-agnostic prefill).

Queries of a head are far from isotropic: most of their energy lies along one bearing. If queries mostly point along
a unit direction u, a key's expected logit is roughly proportional to its component along u, so a key can be judged
by one dot product, with no attention at all. We estimate each head's bearing from the closing 64 context queries:
with RoPE removed (view.rotate(q, -pos)), the leading right singular vector of the stacked queries, its sign chosen so
that the queries' mean projection is positive. Keys are un-rotated the same way and scored by their projection on the
bearing, averaged over the KV head's query heads. The closing 64 rows and the 4 opening tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _bearing(q: torch.Tensor) -> torch.Tensor:
    """(H, N, D) -> (H, D): leading right singular vector per head, oriented along the mean query."""
    _, _, vh = torch.linalg.svd(q, full_matrices=False)
    u = vh[:, 0, :]
    sign = torch.sign((q.mean(dim=1) * u).sum(dim=-1, keepdim=True))
    return u * torch.where(sign == 0, torch.ones_like(sign), sign)


class PrincipalBearing(EvictionMethod):
    name = "principal_bearing"
    query_window = 64
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.rotate(view.queries.float(), -view.query_positions)  # (H_q, N, D), pre-RoPE
        u = _bearing(q)  # (H_q, D)
        g = view.model.group_size
        k = torch.stack([view.rotate(view.keys[h].float(), -view.positions[h]) for h in range(view.n_kv_heads)])
        proj = torch.einsum("hgd,htd->hgt", u.view(view.n_kv_heads, g, -1), k).mean(dim=1)  # (H_kv, T)
        fixed = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(proj.masked_fill(fixed, float("inf")), view.budget, view.valid)
