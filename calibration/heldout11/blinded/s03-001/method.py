"""Radius-cover sampling (board B_offline).

Two questions decide what a future query can still read from a compressed cache: *where* the keys are (every
region of key space a query could land in should still have a key to land on) and *how much* the values carry
(large values move the read-out most). We answer each with its own half of the budget, per KV head:

1. Cover. Keys are swept in context order and grouped greedily: a key further than a radius from every group
   opened so far opens a new group, otherwise it joins the nearest one. The radius is searched (bisection) so that
   the number of groups matches the cover half of the budget, and each group is represented by one of its members
   drawn uniformly.
2. Mass. The rest of the budget is drawn without replacement with probability proportional to the squared value
   norm.

The newest ``recent`` tokens are always kept. Everything is seeded, so the selection is reproducible.
"""

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


def _sweep(x: np.ndarray, radius: float) -> np.ndarray:
    """Greedy in-order grouping: the group of each row."""
    centres = [x[0]]
    label = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(1, x.shape[0]):
        c = np.asarray(centres)
        dist = np.sqrt(((c - x[i]) ** 2).sum(1))
        j = int(dist.argmin())
        if dist[j] > radius:
            centres.append(x[i])
            label[i] = len(centres) - 1
        else:
            label[i] = j
    return label


class RadiusCover(EvictionMethod):
    name = "radius_cover"
    recent = 8
    cover_share = 0.5
    search_steps = 10
    seed = 3

    def _cover(self, x: np.ndarray, groups: int) -> np.ndarray:
        lo, hi = 0.0, float(np.sqrt(((x - x.mean(0)) ** 2).sum(1)).max() * 2 + 1e-6)
        best = _sweep(x, hi)
        for _ in range(self.search_steps):
            mid = 0.5 * (lo + hi)
            lab = _sweep(x, mid)
            if lab.max() + 1 > groups:
                lo = mid
            else:
                hi, best = mid, lab
        return best

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        rng = np.random.default_rng(self.seed * 7919 + view.layer * 31 + t)
        recent = min(self.recent, b)
        rest = b - recent
        out = []
        for h in range(view.n_kv_heads):
            order = torch.argsort(view.positions[h]).cpu().numpy()
            tail, body = order[t - recent:], order[: t - recent]
            picked: list[int] = []
            n_cover = int(rest * self.cover_share)
            if n_cover > 0 and body.size:
                keys = view.keys[h, torch.as_tensor(body, device=view.keys.device)].float().cpu().numpy()
                lab = self._cover(keys, n_cover)
                for g in np.unique(lab):
                    members = body[lab == g]
                    picked.append(int(members[rng.integers(members.size)]))
            picked = picked[:n_cover]
            left = rest - len(picked)
            if left > 0:
                pool = np.setdiff1d(body, np.asarray(picked, dtype=np.int64))
                energy = (view.values[h, torch.as_tensor(pool, device=view.keys.device)].float() ** 2).sum(-1)
                energy = energy.cpu().double().numpy() + 1e-12
                gumbel = -np.log(-np.log(rng.random(pool.size)))
                draw = pool[np.argsort(-(np.log(energy) + gumbel))[:left]]
                picked.extend(int(i) for i in draw)
            idx = np.unique(np.concatenate([np.asarray(picked, dtype=np.int64), tail]))
            out.append(torch.as_tensor(idx, dtype=torch.long, device=view.keys.device))
        return Keep(tuple(out))
