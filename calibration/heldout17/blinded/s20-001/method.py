"""Span-weight retention (board B_offline, one-off compression pass).

A query-agnostic cache has to serve questions it has not seen, so we ask which entries the *span* of the cache
depends on. For each KV head we take the rank-16 principal subspace of the (uncentred) key matrix and of the value
matrix; an entry's span weight in a matrix is the squared length of its row in the subspace's orthonormal basis,
i.e. how much of that subspace only it supports. The entry's score is the geometric mean of its key span weight and
its value span weight: entries that anchor both what can be matched and what can be read out rank highest. The
newest 16 entries and the 4 opening tokens are always kept. The factorisations run once per layer in the offline
pass.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _span_weight(x: torch.Tensor, rank: int) -> torch.Tensor:
    """(T, D) -> (T,): squared row norms of the leading-`rank` left singular vectors."""
    u, _, _ = torch.linalg.svd(x, full_matrices=False)
    return u[:, :rank].pow(2).sum(dim=-1)


class SpanWeight(EvictionMethod):
    name = "span_weight"
    rank = 16
    opening = 4
    newest = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        real = view.valid_mask()
        score = torch.zeros(view.n_kv_heads, view.n_tokens, device=view.keys.device)
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(real[h]).flatten()
            k = view.keys[h, idx].double()
            v = view.values[h, idx].double()
            r = min(self.rank, k.shape[0], k.shape[1])
            lk = _span_weight(k, r)
            lv = _span_weight(v, r)
            score[h, idx] = (lk * lv).sqrt().float()
        top = view.positions.masked_fill(~real, -1).amax(dim=-1, keepdim=True)
        fixed = (view.positions < self.opening) | (view.positions > top - self.newest)
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
