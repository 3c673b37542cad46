"""Contrast-switched eviction (board C; Rewrite).

Whether to drop or to merge should depend on what the layer's attention looks like at the moment. When the
newest queries single out a few tokens (their attention over the evictable span has high relative spread),
the unattended tokens are noise and are dropped. When attention is flat, no token is clearly expendable, but
many are interchangeable: then we merge, pairing tokens across two interleaved halves of the span and folding
each of the most similar pairs (key cosine) into one size-weighted entry. The switch is made per KV head at
every eviction, on the coefficient of variation of the attention scores. Four opening tokens and the newest 24
stay untouched; merged sizes are carried across calls.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class ContrastSwitched(EvictionMethod):
    name = "contrast_switched"
    query_window = 16
    n_open = 4
    n_new = 24
    spread_gate = 1.0

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        if view.queries is not None:
            imp = view.group(view.attention(reduce="mean"), "mean")
        else:
            imp = view.positions.float()
        sizes = view.recall("fold_size", fill=1.0)
        ks, vs, ps, ss = [], [], [], []
        for h in range(view.n_kv_heads):
            ok = valid[h]
            k, v, p = view.keys[h][ok].float(), view.values[h][ok].float(), view.positions[h][ok]
            s, w = imp[h][ok].float(), sizes[h][ok].clamp_min(1.0)
            n = k.shape[0]
            b = min(view.budget, n)
            drop_n = n - b
            if drop_n <= 0:
                ks.append(k); vs.append(v); ps.append(p); ss.append(w)
                continue
            fixed = (p < min(self.n_open, b // 8)) | (p > int(p.max()) - min(self.n_new, b // 4))
            span = (~fixed).nonzero().flatten()
            sv = s[span]
            spread = float(sv.std() / sv.mean().clamp_min(1e-12)) if span.numel() > 1 else 0.0
            keep = torch.ones(n, dtype=torch.bool)
            if spread > self.spread_gate or span.numel() < 2 * drop_n:
                keep[span[sv.argsort()[:drop_n]]] = False
            else:
                a_idx, b_idx = span[0::2], span[1::2]
                sim = F.normalize(k[a_idx], dim=-1) @ F.normalize(k[b_idx], dim=-1).T
                best, dest = sim.max(1)
                movers = best.argsort(descending=True)[:drop_n]
                k, v, w = k.clone(), v.clone(), w.clone()
                for m in movers.tolist():
                    src, dst = int(a_idx[m]), int(b_idx[dest[m]])
                    tot = w[src] + w[dst]
                    k[dst] = (w[src] * k[src] + w[dst] * k[dst]) / tot
                    v[dst] = (w[src] * v[src] + w[dst] * v[dst]) / tot
                    w[dst] = tot
                    keep[src] = False
            ks.append(k[keep]); vs.append(v[keep]); ps.append(p[keep]); ss.append(w[keep])
        self._store_sizes(view, ps, ss)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))

    @staticmethod
    def _store_sizes(view: LayerView, ps, ss) -> None:
        t = max(x.numel() for x in ps)
        pos = torch.full((len(ps), t), -1, dtype=torch.long)
        val = torch.ones(len(ps), t)
        ok = torch.zeros(len(ps), t, dtype=torch.bool)
        for h, (p, s) in enumerate(zip(ps, ss)):
            pos[h, : p.numel()], val[h, : p.numel()], ok[h, : p.numel()] = p, s, True
        view.state["fold_size"] = (pos, val, ok)
