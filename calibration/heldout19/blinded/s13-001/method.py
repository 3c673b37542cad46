"""Absorb-on-evict (board C, decode-time merging).

A full layer keeps its heavy tokens (attention received since the start, summed) and a recent stretch; every token it
drops is compared with the kept ones, and if it is close enough to its nearest kept neighbour (cosine of the keys above
a running bar) it is absorbed into that neighbour by a similarity-weighted average of keys and values instead of
disappearing. The bar is a moving average of the similarities seen so far.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class AbsorbOnEvict(EvictionMethod):
    name = "absorb_on_evict"
    query_window = 512
    tail = 32
    bar_momentum = 0.9

    def select(self, view: LayerView) -> Rewrite:
        heavy = view.recall("heavy")
        if view.queries is not None:
            done = view.state.get("heavy_q", -1)
            fresh = view.query_positions > done
            if bool(fresh.any()):
                heavy = heavy + view.group(view.attention()[:, fresh].sum(dim=1), "sum")
                view.state["heavy_q"] = int(view.query_positions.max())
        view.remember("heavy", heavy)
        valid = view.valid_mask()
        keys, values, positions = [], [], []
        bar = view.state.get("bar")
        sims_seen = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            n = idx.numel()
            b = min(view.budget, n)
            k, v, p = view.keys[h, idx], view.values[h, idx], view.positions[h, idx]
            if b >= n:
                keys.append(k), values.append(v), positions.append(p)
                continue
            score = heavy[h, idx].clone()
            score[max(0, n - min(self.tail, b)):] = math.inf
            keep = score.topk(b).indices.sort().values
            drop = torch.ones(n, dtype=torch.bool, device=k.device)
            drop[keep] = False
            kk, kv = k[keep].float(), v[keep].float()
            if bool(drop.any()):
                sim = F.normalize(k[drop].float(), dim=-1) @ F.normalize(kk, dim=-1).T  # (E, K)
                best, near = sim.max(dim=1)
                sims_seen.append(best.mean())
                line = float(best.mean()) if bar is None else bar
                take = best >= line
                w = best[take].exp().unsqueeze(1)
                tot_k = kk * math.e
                tot_v = kv * math.e
                norm = torch.full((kk.shape[0], 1), math.e, device=k.device)
                tot_k.index_add_(0, near[take], w * k[drop][take].float())
                tot_v.index_add_(0, near[take], w * v[drop][take].float())
                norm.index_add_(0, near[take], w)
                kk, kv = tot_k / norm, tot_v / norm
            keys.append(kk.to(view.keys.dtype)), values.append(kv.to(view.values.dtype)), positions.append(p[keep])
        if sims_seen:
            m = float(torch.stack(sims_seen).mean())
            view.state["bar"] = m if bar is None else self.bar_momentum * bar + (1 - self.bar_momentum) * m
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
