"""Pooled cache: the keys of a head are grouped into as many groups as the budget allows (a few rounds of nearest-
centre assignment), and each group is replaced by its mean key and mean value, placed at its latest position."""

import torch

from harness.api import EvictionMethod, LayerView, Rewrite


class PooledCache(EvictionMethod):
    name = "pooled_cache"
    rounds = 4

    def select(self, view: LayerView) -> Rewrite:
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            k, v, pos = view.keys[h].float(), view.values[h].float(), view.positions[h]
            c = min(view.budget, k.shape[0])
            centres = k[torch.linspace(0, k.shape[0] - 1, c).long()]
            for _ in range(self.rounds):
                owner = torch.cdist(k, centres).argmin(dim=1)
                count = torch.zeros(c).index_add_(0, owner, torch.ones(k.shape[0])).clamp_min(1)[:, None]
                centres = torch.zeros_like(centres).index_add_(0, owner, k) / count
            vals = torch.zeros(c, v.shape[-1]).index_add_(0, owner, v) / count
            where = torch.zeros(c, dtype=torch.long).index_reduce_(0, owner, pos, "amax", include_self=False)
            order = where.argsort()
            ks.append(centres[order].to(view.keys.dtype))
            vs.append(vals[order].to(view.values.dtype))
            ps.append(where[order])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
