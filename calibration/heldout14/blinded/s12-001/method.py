"""Juror-weighted retention with density recycling (board B_offline; Rewrite).

The repeat pass of B_offline gives us many readers of the context, but not all of them are informative: a repeat
row that spreads its attention over the opening tokens says little about the body. We seat a jury: rows whose
attention on the context body (outside the four opening tokens) is at least the average row's become jurors, and
only jurors vote (their attention averaged, then averaged over the KV head's query heads). The best-voted entries
are kept. The share of the layer not used by them holds recycled entries: the strongest thirty percent of the
rejected entries are grouped around density peaks of their keys, and each group is stored as one averaged entry.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


def _density_peaks(x: torch.Tensor, n_centres: int, k: int = 5) -> torch.Tensor:
    """Group labels (n,): centres are the points with the largest density x separation."""
    n = x.shape[0]
    if n <= n_centres:
        return torch.arange(n)
    d = torch.cdist(x, x)
    kk = min(k, n - 1)
    knn = d.topk(kk + 1, largest=False).values[:, 1:]
    rho = torch.exp(-(knn ** 2).mean(1))
    higher = rho[None, :] > rho[:, None]
    delta = torch.where(higher, d, torch.full_like(d, float("inf"))).amin(1)
    delta = torch.where(torch.isinf(delta), d.amax(1), delta)
    centres = (rho * delta).topk(n_centres).indices
    return d[:, centres].argmin(1)


class JurorRecycling(EvictionMethod):
    name = "juror_recycling"
    reconstruction_queries = True
    n_open = 4
    recycle_share = 0.3
    slots_per_group = 16

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        g = view.model.group_size
        if view.queries is not None:
            att = view.attention(view.queries)  # (H_q, N, T), the repeat rows read every context entry
            body = (view.positions >= self.n_open).repeat_interleave(g, 0)[:, None, :]
            reach = (att * body).sum(-1).mean(0)  # (N,): body mass per row, over all heads
            jurors = reach >= reach.mean()
            vote = view.group(att[:, jurors].mean(1), "mean")
        else:
            vote = view.positions.float()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            ok = valid[h]
            k, v, p, s = view.keys[h][ok].float(), view.values[h][ok].float(), view.positions[h][ok], vote[h][ok]
            n = k.shape[0]
            b = min(view.budget, n)
            if b >= n:
                ks.append(k); vs.append(v); ps.append(p)
                continue
            s = s.masked_fill(p < min(self.n_open, b // 8), float("inf"))
            n_groups = max(1, b // self.slots_per_group)
            direct = b - n_groups
            order = s.argsort(descending=True)
            keep, rest = order[:direct], order[direct:]
            rest = rest[: max(n_groups, int(self.recycle_share * rest.numel()))]
            lab = _density_peaks(k[rest], n_groups)
            gk, gv, gp = [], [], []
            for c in lab.unique():
                m = rest[lab == c]
                gk.append(k[m].mean(0)); gv.append(v[m].mean(0)); gp.append(p[m].max())
            kk = torch.cat([k[keep], torch.stack(gk)])
            vv = torch.cat([v[keep], torch.stack(gv)])
            pp = torch.cat([p[keep], torch.stack(gp)])
            o = pp.argsort()
            ks.append(kk[o]); vs.append(vv[o]); ps.append(pp[o])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
