"""Density-peak consolidation (board B_offline; merges entries with ``Rewrite``).

A cache under a tight budget should hold one entry per distinct piece of content, placed where content is dense,
and the entries that are folded away should pull the survivor towards themselves in proportion to how much they
matter. We use B_offline's repeat pass (``reconstruction_queries``) to say how much each entry matters and a local
density estimate in key space to say where the representatives go.

- Importance: the repeat pass's maximum attention to each entry, maximised over the KV head's query heads.
- Representatives: within windows of 1,024 entries (so the distance matrices stay small), each entry's density is
  exp(-mean squared distance to its 5 nearest neighbours) over unit-normalised unrotated keys, and its separation is
  the distance to the nearest entry of higher density (the largest distance for the densest one). The entries
  with the largest density x separation become representatives, as many as the window's share of the budget.
- Folding: every other entry joins its nearest representative; a representative's key and value become the
  members' mean weighted by exp(importance / its window's mean importance), at the representative's position.
- Four opening tokens and the closing 32 tokens are kept exactly.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class DensityPeakConsolidation(EvictionMethod):
    name = "density_peak_consolidation"
    reconstruction_queries = True
    window = 1024
    neighbours = 5
    opening = 4
    closing = 32

    def _window(self, keys0, k, v, p, imp, m):
        x = F.normalize(keys0, dim=-1)
        d = torch.cdist(x, x)  # (L, L)
        L = x.shape[0]
        nn = min(self.neighbours, L - 1)
        knn = d.topk(nn + 1, largest=False).values[:, 1:] if nn > 0 else torch.zeros(L, 1)
        rho = torch.exp(-(knn ** 2).mean(dim=1))
        higher = rho[None, :] > rho[:, None]
        delta = d.masked_fill(~higher, float("inf")).amin(dim=1)
        delta = torch.where(torch.isinf(delta), d.amax(dim=1), delta)
        reps = (rho * delta).topk(m).indices.sort().values
        owner = d[:, reps].argmin(dim=1)
        owner[reps] = torch.arange(m)
        logw = imp / imp.mean().clamp_min(1e-12)
        top = torch.full((m,), float("-inf")).scatter_reduce(0, owner, logw, reduce="amax")
        w = torch.exp(logw - top[owner])  # per-cluster shift: the same weights, no overflow
        den = torch.zeros(m).index_add_(0, owner, w)
        kk = torch.zeros(m, k.shape[1]).index_add_(0, owner, k * w[:, None]) / den[:, None]
        vv = torch.zeros(m, v.shape[1]).index_add_(0, owner, v * w[:, None]) / den[:, None]
        return kk, vv, p[reps]

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        if view.queries is not None:
            imp_all = view.group(view.attention(reduce="max"), "max")
        else:
            imp_all = torch.ones(view.keys.shape[:2])
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            k, v, p = view.keys[h, :n].float(), view.values[h, :n].float(), view.positions[h, :n]
            head, tail = min(self.opening, n), min(self.closing, max(0, n - self.opening))
            room = view.budget - head - tail
            if n <= view.budget or room <= 0:
                idx = torch.arange(n)[-view.budget:]
                ks.append(k[idx].to(view.keys.dtype)); vs.append(v[idx].to(view.values.dtype)); ps.append(p[idx].clone())
                continue
            lo_all, hi_all = head, n - tail
            L = hi_all - lo_all
            k0 = view.rotate(k[lo_all:hi_all], -p[lo_all:hi_all])
            parts = []
            starts = list(range(0, L, self.window))
            quota = [max(1, int(room * (min(L, s + self.window) - s) / L)) for s in starts]
            while sum(quota) > room:
                j = max(range(len(quota)), key=lambda i: quota[i])
                quota[j] -= 1
            for s, m in zip(starts, quota):
                e = min(L, s + self.window)
                a, b = lo_all + s, lo_all + e
                if m <= 0:
                    continue
                if m >= e - s:
                    parts.append((k[a:b], v[a:b], p[a:b]))
                    continue
                parts.append(self._window(k0[s:e], k[a:b], v[a:b], p[a:b], imp_all[h, a:b], m))
            mk, mv, mp = (torch.cat(x) for x in zip(*parts))
            ks.append(torch.cat([k[:head], mk, k[hi_all:]]).to(view.keys.dtype))
            vs.append(torch.cat([v[:head], mv, v[hi_all:]]).to(view.values.dtype))
            ps.append(torch.cat([p[:head], mp, p[hi_all:]]))
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
