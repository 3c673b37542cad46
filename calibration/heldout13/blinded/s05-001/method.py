"""Token Pooling for the KV cache (board B_online): a training-free port.

Port of Token Pooling (Marin, Chang, Ranjan, Prabhu, Rastegari, Tuzel; "Token Pooling in Vision
Transformers", arXiv 2110.03860) from ViT activations to a KV cache. Token Pooling downsamples a token set by
clustering it and keeping the cluster centres, with a weighted K-Means in which each token is weighted by its
significance, so that important tokens pull the centres towards themselves.

What is ported: weighted K-Means (Lloyd iterations) over the tokens of each KV head, centres initialised at the
most significant tokens, outputs = weighted cluster means. Deviations (ours, not the paper's):
- clustering is done in key space per KV head and the values are pooled with the same assignment and weights;
- significance = attention of the last 32 context rows (query-agnostic board), averaged over the group, plus a
  small floor, instead of the paper's attention-based weights inside a ViT block;
- each centre takes the position of its most significant member (the cache needs one position per entry);
- the four opening tokens and the newest 16 are kept as they are (not clustered);
- a fixed 4 Lloyd iterations.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class TokenPoolingKV(EvictionMethod):
    name = "token_pooling_kv"
    query_window = 32
    opening = 4
    newest = 16
    iters = 4

    def _significance(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return torch.ones(view.keys.shape[:2], device=view.keys.device)
        a = view.group(view.attention(reduce="mean"), "mean")
        return a + 1e-4

    def _pool(self, k, v, p, w, m):
        n = k.shape[0]
        centres = w.topk(m).indices
        ck = k[centres].clone()
        for _ in range(self.iters + 1):
            d = torch.cdist(k, ck)  # (n, m)
            assign = d.argmin(dim=1)
            tot = torch.zeros(m, device=k.device).index_add_(0, assign, w)
            ck = torch.zeros_like(ck).index_add_(0, assign, k * w[:, None]) / tot.clamp_min(1e-12)[:, None]
        cv = torch.zeros(m, v.shape[1], device=k.device).index_add_(0, assign, v * w[:, None])
        cv = cv / tot.clamp_min(1e-12)[:, None]
        # position of each cluster's heaviest member
        best = torch.full((m,), -1.0, device=k.device)
        best = best.scatter_reduce(0, assign, w, reduce="amax")
        is_top = w >= best[assign]
        rep = torch.full((m,), -1, dtype=torch.long, device=k.device)
        rep.scatter_(0, assign[is_top], torch.arange(n, device=k.device)[is_top])
        used = (tot > 0) & (rep >= 0)
        return ck[used], cv[used], p[rep[used]]

    def select(self, view: LayerView) -> Rewrite:
        sig = self._significance(view)
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            m = valid[h]
            k, v, p, w = view.keys[h][m].float(), view.values[h][m].float(), view.positions[h][m], sig[h][m]
            n = k.shape[0]
            if n <= view.budget:
                ks.append(k), vs.append(v), ps.append(p)
                continue
            lo = min(self.opening, n)
            hi = max(lo, n - self.newest)
            fixed = torch.cat([torch.arange(0, lo), torch.arange(hi, n)]).to(k.device)
            room = view.budget - fixed.numel()
            if room <= 0 or hi - lo <= room:
                keep = p.float().topk(view.budget).indices.sort().values
                ks.append(k[keep]), vs.append(v[keep]), ps.append(p[keep])
                continue
            mid = slice(lo, hi)
            pk, pv, pp = self._pool(k[mid], v[mid], p[mid], w[mid], room)
            allk, allv, allp = torch.cat([k[fixed], pk]), torch.cat([v[fixed], pv]), torch.cat([p[fixed], pp])
            order = allp.argsort()
            ks.append(allk[order]), vs.append(allv[order]), ps.append(allp[order].long())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
