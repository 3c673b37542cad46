"""Fold-In Cache: nothing is simply thrown away; a dropped token that resembles its kept neighbour is folded into it."""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import Rewrite


class FoldInCache(EvictionMethod):
    name = "fold_in_cache"
    reconstruction_queries = True
    query_window = 32               # the context's tail where no re-read pass is offered
    link = 0.75                     # cosine between consecutive keys that keeps a run together
    width = 1.0                     # Gaussian kernel width, in units of the run's mean key distance
    lead = 4

    def select(self, view: LayerView) -> Keep | Rewrite:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = view.group(view.attention(reduce="max"), "max").masked_fill(~valid, float("-inf"))
        score[:, : self.lead] = float("inf")
        chosen = Keep.from_topk(score, view.budget, view.valid).indices
        keys, values, positions = [], [], []
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            k = view.keys[h, :c].float()
            v = view.values[h, :c].float()
            kn = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)
            joined = torch.ones(c, dtype=torch.bool)
            joined[1:] = (kn[1:] * kn[:-1]).sum(-1) >= self.link
            joined[0] = False
            run = torch.cumsum((~joined).long(), dim=0) - 1                  # run id of every token
            piv = chosen[h]
            is_piv = torch.zeros(c, dtype=torch.bool)
            is_piv[piv] = True
            # each dropped token looks for a pivot of its own run: nearest kept position to its left, else right
            slot = torch.searchsorted(piv, torch.arange(c)).clamp(max=piv.numel() - 1)
            left = (slot - 1).clamp(min=0)
            near = torch.where((piv[left] < torch.arange(c)) & (run[piv[left]] == run), left, slot)
            same = (run[piv[near]] == run) & ~is_piv
            d = (k - k[piv[near]]).norm(dim=-1)
            scale = d[same].mean().clamp_min(1e-6) * self.width if bool(same.any()) else torch.tensor(1.0)
            w = torch.where(same, torch.exp(-(d / scale) ** 2 / 2), torch.zeros(c))
            w = torch.where(is_piv, torch.ones(c), w)
            owner = torch.where(is_piv | same, near, torch.full((c,), -1))
            owner[piv] = torch.arange(piv.numel())
            take = owner >= 0
            den = torch.zeros(piv.numel()).index_add_(0, owner[take], w[take])
            ksum = torch.zeros(piv.numel(), k.shape[1]).index_add_(0, owner[take], k[take] * w[take, None])
            vsum = torch.zeros(piv.numel(), v.shape[1]).index_add_(0, owner[take], v[take] * w[take, None])
            keys.append((ksum / den[:, None]).to(view.keys.dtype))
            values.append((vsum / den[:, None]).to(view.values.dtype))
            positions.append(view.positions[h, piv].clone())
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
