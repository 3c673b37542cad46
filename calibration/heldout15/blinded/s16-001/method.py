"""Tri-factor pair fusion (board A, question-aware prefill; merges entries with ``Rewrite``).

Dropping tokens throws their content away; folding them into a neighbour in key space keeps part of it. Which pairs
to fold is the whole question, and one criterion is not enough: key similarity alone folds the very tokens the
question is about into each other. We rank candidate pairs by an attraction that multiplies three factors (see
DESCRIPTION.md): how alike the two keys are, how little the question attends to the pair, and how much the pair
has already absorbed.

Each round splits the foldable entries into two alternating halves, every entry of the source half finds its most
attractive partner in the other half, and the most attractive pairs are folded (as many as the round may, up to the
remaining excess); the halves swap roles next round, until the layer fits its budget. A folded
entry's key and value are the pooled members' key and value, weighted by the question's attention to them; it sits at
its partner's position. The question span and four opening tokens are never folded.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class TriFactorFusion(EvictionMethod):
    name = "tri_factor_fusion"
    question_queries = True
    query_window = 8
    opening = 4
    t_sim = 1.0
    t_info = 1.0
    t_size = 1.0

    def _informativeness(self, view: LayerView) -> torch.Tensor:
        return view.group(view.attention(reduce="mean"), "mean")  # (H_kv, T)

    def _fold_head(self, k, v, p, info, fixed, budget):
        size = torch.ones(k.shape[0])
        weight = info.clamp_min(1e-6).clone()
        alive = torch.ones(k.shape[0], dtype=torch.bool)
        k, v = k.float().clone(), v.float().clone()
        flip = 0
        while int(alive.sum()) > budget:
            excess = int(alive.sum()) - budget
            cand = torch.nonzero(alive & ~fixed).flatten()
            if cand.numel() < 2:
                break
            src, dst = cand[flip::2], cand[1 - flip::2]
            flip ^= 1
            if dst.numel() == 0:
                continue
            sim = F.normalize(k[src], dim=-1) @ F.normalize(k[dst], dim=-1).T
            w_sim = ((sim + 1) / 2).clamp_min(1e-6) ** self.t_sim
            w_info = (1.0 / (weight[src][:, None] + weight[dst][None, :])) ** self.t_info
            w_info = w_info / w_info.max()
            w_size = (1.0 / (size[src][:, None] + size[dst][None, :])) ** self.t_size
            attract = w_sim * w_info * w_size
            best, partner = attract.max(dim=1)
            r = min(src.numel(), excess)
            order = best.argsort(descending=True)[:r]
            a, b = src[order], dst[partner[order]]
            wk, wv = k * weight[:, None], v * weight[:, None]
            wk.index_add_(0, b, wk[a])
            wv.index_add_(0, b, wv[a])
            pooled = weight.clone().index_add_(0, b, weight[a])
            k[b], v[b] = wk[b] / pooled[b, None], wv[b] / pooled[b, None]
            weight = pooled
            alive[a] = False
        keep = torch.nonzero(alive).flatten()
        if keep.numel() > budget:
            keep = keep[-budget:]
        return k[keep], v[keep], p[keep]

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        info = (self._informativeness(view) if view.queries is not None
                else torch.ones(view.keys.shape[:2]))
        qstart = int(view.query_positions.min()) if view.query_positions is not None else 1 << 62
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            p = view.positions[h, :n]
            fixed = (p < self.opening) | (p >= qstart)
            k, v, pp = self._fold_head(view.keys[h, :n], view.values[h, :n], p, info[h, :n], fixed, view.budget)
            ks.append(k.to(view.keys.dtype))
            vs.append(v.to(view.values.dtype))
            ps.append(pp.clone())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
