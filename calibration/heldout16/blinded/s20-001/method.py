"""Host folding (board C, decode-time; rewrites entries with ``Rewrite``).

When a layer is full, the block it gives back still holds something the trace may need. We fold each given-back
entry into the kept entry it resembles most (its host), instead of dropping it.

1. Importance: attention of the newest 16 queries, averaged over them and over the query heads of the KV head.
2. Hosts: the newest 8 entries and the most important ones up to the budget are kept.
3. Folding: every other entry finds its host by key cosine similarity (one host each). A host becomes the weighted
   mean of itself and the entries folded into it, keys and values alike, each guest weighted by exp(its cosine to
   the host) and the host by exp(1); it keeps its position.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class HostFolding(EvictionMethod):
    name = "host_folding"
    query_window = 16
    newest = 8

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        if view.queries is not None:
            imp = view.group(view.attention(reduce="mean"), "mean")
        else:
            imp = view.positions.float().clamp_min(0) + 1.0
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            n = idx.numel()
            b = min(view.budget, n)
            k, v, p = view.keys[h, idx].float(), view.values[h, idx].float(), view.positions[h, idx]
            s = imp[h, idx].clone()
            s[max(0, n - self.newest):] = float("inf")
            order = s.argsort(descending=True)
            hosts, guests = order[:b].sort().values, order[b:]
            self_w = torch.e
            kk, vv = k[hosts] * self_w, v[hosts] * self_w
            tot = torch.full((hosts.numel(),), self_w, device=k.device)
            if guests.numel() and b > 0:
                sim = F.normalize(k[guests], dim=-1) @ F.normalize(k[hosts], dim=-1).T
                best, to = sim.max(dim=-1)
                w = best.exp()
                kk.index_add_(0, to, k[guests] * w[:, None])
                vv.index_add_(0, to, v[guests] * w[:, None])
                tot.index_add_(0, to, w)
            ks.append((kk / tot[:, None]).to(view.keys.dtype))
            vs.append((vv / tot[:, None]).to(view.values.dtype))
            ps.append(p[hosts])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
