"""Headroom: keep the entries that give the retained keys the most room, as seen through the closing rows' eyes.

A kept set is useful when its keys span many directions the future readers may probe, and when those directions are
ones readers actually use. Each entry gets its share of a weighted key-space volume: with w the attention the closing
rows pay each entry (summed over rows, averaged over the KV head's query heads) and G = sum_t w_t k_t k_t^T + ridge,
an entry's share is w_t * k_t^T G^{-1} k_t. Entries with a large share are the ones whose loss would shrink the
weighted volume most. The closing rows and the first four entries are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class Headroom(EvictionMethod):
    name = "headroom"
    query_window = 32
    ridge = 1e-2
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        use = view.group(view.attention(reduce="sum"), "mean") * view.valid_mask()     # (H_kv, T)
        keys = view.keys.float() * view.valid_mask()[..., None]
        d = keys.shape[-1]
        gram = torch.matmul(keys.transpose(1, 2) * use[:, None, :], keys)              # (H_kv, D, D)
        lift = self.ridge * gram.diagonal(dim1=1, dim2=2).mean(dim=1).clamp_min(1e-6)
        gram = gram + lift[:, None, None] * torch.eye(d)
        chol = torch.linalg.cholesky(gram)
        solved = torch.cholesky_solve(keys.transpose(1, 2), chol)                      # (H_kv, D, T) = G^-1 k
        share = use * (keys.transpose(1, 2) * solved).sum(dim=1)
        share = share.masked_fill((view.positions < self.n_sink) | (view.positions >= view.query_positions.min()),
                                  float("inf"))
        return Keep.from_topk(share, view.budget, view.valid)
