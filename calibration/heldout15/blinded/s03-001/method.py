"""Norm-keeping pair fusion (board C, decode-time; rewrites entries with ``Rewrite``).

When a layer is full, the block to give back is taken from entries that have a near twin in key space. The
evictable entries are split into two alternating halves; each entry of the first half finds its most similar
entry of the second (cosine of the keys) and the most similar pairs are resolved, as many as the block needs.

How a pair is resolved depends on depth. Averaging two vectors shrinks them (the mean of two unit vectors at an
angle is shorter than either), and a shrunken key draws less attention than both of its parents did. So in the
deeper two thirds of the attention layers a pair is fused norm-keeping: the mean direction, rescaled to the larger
of the two norms, for keys and values alike. In the shallow third, where keys are still close to the embeddings and
twins are usually exact repeats, the first-half entry is simply dropped and its twin kept unchanged.

Four opening tokens and the newest 16 are never touched; a fused entry keeps its second-half member's position.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


def _norm_keeping(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    mid = (a + b) / 2
    scale = torch.maximum(a.norm(dim=-1), b.norm(dim=-1)) / mid.norm(dim=-1).clamp_min(1e-6)
    return mid * scale[:, None]


class NormKeepingFusion(EvictionMethod):
    name = "norm_keeping_fusion"
    opening = 4
    newest = 16

    def setup(self, model):
        attn = list(model.attention_layers)
        cut = len(attn) // 3
        self._shallow = set(attn[:cut])

    def _resolve(self, k, v, p, budget, fuse):
        n = k.shape[0]
        alive = torch.ones(n, dtype=torch.bool)
        k, v = k.float().clone(), v.float().clone()
        flip = 0
        while int(alive.sum()) > budget:
            excess = int(alive.sum()) - budget
            cand = torch.nonzero(alive).flatten()
            cand = cand[(p[cand] >= self.opening)]
            cand = cand[: max(0, cand.numel() - self.newest)]
            if cand.numel() < 2:
                keep = torch.nonzero(alive).flatten()[-budget:]
                return k[keep], v[keep], p[keep]
            a, b = cand[flip::2], cand[1 - flip::2]
            flip ^= 1
            sim = F.normalize(k[a], dim=-1) @ F.normalize(k[b], dim=-1).T
            best, partner = sim.max(dim=1)
            r = min(a.numel(), excess)
            chosen = best.topk(r).indices
            src, dst = a[chosen], b[partner[chosen]]
            if fuse:
                # a destination claimed by several sources takes only its best one this round
                dst_u, first = torch.unique(dst, return_inverse=True)
                pick = torch.full((dst_u.numel(),), -1, dtype=torch.long)
                pick.scatter_reduce_(0, first, torch.arange(dst.numel()), reduce="amin", include_self=False)
                src, dst = src[pick], dst_u
                k[dst] = _norm_keeping(k[src], k[dst])
                v[dst] = _norm_keeping(v[src], v[dst])
            alive[src] = False
        keep = torch.nonzero(alive).flatten()
        return k[keep], v[keep], p[keep]

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        fuse = view.layer not in getattr(self, "_shallow", set())
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            k, v, p = view.keys[h, :n], view.values[h, :n], view.positions[h, :n]
            k2, v2, p2 = self._resolve(k, v, p, view.budget, fuse)
            ks.append(k2.to(view.keys.dtype)); vs.append(v2.to(view.values.dtype)); ps.append(p2.clone())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
