"""Second Chance: evict by accumulated attention, then let each evicted token merge back into its closest
survivor if the two are alike.

At every cap the decode queries since the previous call add their attention to per-token sums carried by
position (H2O-style). The lowest-sum tokens are evicted, keeping sinks and a recent window. Each evicted
token's key is compared (cosine) with the kept keys; if its best match beats a threshold that tracks the
running average of recent best matches, its key and value are averaged into that match (weighted by
their sums) instead of being dropped. Layers whose attention is denser get smaller caps (layer-budget hook).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class SecondChance(EvictionMethod):
    name = "second_chance"
    query_window = 64
    sinks = 4
    recent = 16
    ema = 0.9

    def select(self, view: LayerView) -> Rewrite:
        sums = view.recall("mass")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                a = view.attention(view.queries[:, fresh], reduce="sum") if not bool(fresh.all()) else view.attention(reduce="sum")
                sums = sums + view.group(a, "sum")
                view.state["seen"] = int(view.query_positions.max())
        view.remember("mass", sums)
        thr = view.state.get("thr", 0.5)
        valid = view.valid_mask()
        ks, vs, ps, bests = [], [], [], []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(-1)
            n, b = idx.numel(), min(view.budget, idx.numel())
            s = sums[h, idx].clone()
            s[: min(self.sinks, n)] = float("inf")
            s[max(0, n - self.recent):] = float("inf")
            keep = s.topk(b).indices.sort().values
            k = view.keys[h, idx].float()
            v = view.values[h, idx].float()
            out_k, out_v = k[keep].clone(), v[keep].clone()
            if b < n and b > 0:
                drop = torch.ones(n, dtype=torch.bool)
                drop[keep] = False
                drop_i = drop.nonzero().squeeze(-1)
                sim = F.normalize(k[drop_i], dim=-1) @ F.normalize(k[keep], dim=-1).T
                best, who = sim.max(dim=-1)
                bests.append(best.mean())
                w_keep = sums[h, idx][keep].clamp_min(1e-6).clone()
                merge = best > thr
                if bool(merge.any()):
                    w_d = sums[h, idx][drop_i[merge]].clamp_min(1e-6)
                    tgt = who[merge]
                    acc_k = out_k * w_keep[:, None]
                    acc_v = out_v * w_keep[:, None]
                    acc_k.index_add_(0, tgt, k[drop_i[merge]] * w_d[:, None])
                    acc_v.index_add_(0, tgt, v[drop_i[merge]] * w_d[:, None])
                    tot = w_keep.clone().index_add_(0, tgt, w_d)
                    out_k, out_v = acc_k / tot[:, None], acc_v / tot[:, None]
            ks.append(out_k.to(view.keys.dtype)); vs.append(out_v.to(view.values.dtype))
            ps.append(view.positions[h, idx][keep])
        if bests:
            view.state["thr"] = self.ema * thr + (1 - self.ema) * float(torch.stack(bests).mean())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
