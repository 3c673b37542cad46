"""Outlier-gated retention with a residue entry (board B_online, query-agnostic; Rewrite).

A fixed keep-ratio treats every context alike. We let the context decide how much of it matters: the closing
window's rows score every entry (softmax attention averaged over the rows and the KV head's query heads), and
the entries whose score is a statistical outlier of that layer's distribution (above the upper fence
Q3 + 1.5 IQR) are kept. The budget is a ceiling, never a target; a small floor (a quarter of the share) guards
against contexts with almost no outliers. Everything not kept is folded into a single residue entry (mean key,
mean value) placed at the last dropped position, so the layer never loses all trace of the dropped context.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


def _upper_fence(x: torch.Tensor) -> float:
    q1, q3 = torch.quantile(x.float(), torch.tensor([0.25, 0.75])).tolist()
    return q3 + 1.5 * (q3 - q1)


class OutlierGatedResidue(EvictionMethod):
    name = "outlier_gated_residue"
    query_window = 32
    floor_share = 0.25

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        have_q = view.queries is not None
        rel = view.group(view.attention(reduce="mean"), "mean") if have_q else view.positions.float()
        edge = int(view.query_positions.min()) if have_q else int(view.positions.max()) + 1
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            ok = valid[h]
            k, v, p, r = view.keys[h][ok].float(), view.values[h][ok].float(), view.positions[h][ok], rel[h][ok]
            n = k.shape[0]
            b = min(view.budget, n)
            if b >= n:
                ks.append(k); vs.append(v); ps.append(p)
                continue
            closing = p >= edge
            if int(closing.sum()) > b // 2:
                closing = p > int(p.max()) - b // 4
            cand = (~closing).nonzero().flatten()
            room = b - int(closing.sum()) - 1  # one slot for the residue
            rc = r[cand]
            if room <= 0 or cand.numel() == 0:
                take = cand[:0]
            else:
                out = cand[rc > _upper_fence(rc)]
                order = cand[rc.argsort(descending=True)]
                need = max(int(self.floor_share * room), out.numel())
                take = order[: min(room, need)]
            keep = torch.zeros(n, dtype=torch.bool)
            keep[take] = True
            keep |= closing
            drop = ~keep
            kk, vv, pp = k[keep], v[keep], p[keep]
            if bool(drop.any()) and room >= 0:
                kk = torch.cat([kk, k[drop].mean(0, keepdim=True)])
                vv = torch.cat([vv, v[drop].mean(0, keepdim=True)])
                pp = torch.cat([pp, p[drop].max().reshape(1)])
                order = pp.argsort()
                kk, vv, pp = kk[order], vv[order], pp[order]
            ks.append(kk[:b]); vs.append(vv[:b]); ps.append(pp[:b])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
