"""Fold: nothing that looks like its neighbour is thrown away; it is folded into it.

The context's closing 32 rows score the tokens (summed attention, group mean); the top tokens, the closing rows
and the first 4 tokens survive as anchors. Every other token looks at its nearest anchor on each side and folds
into the one whose key it resembles more, if that resemblance (cosine) is at least 0.6; otherwise it is dropped.
An anchor's new key and value are the kernel-weighted mean of itself and what folded into it, the weight of each
member exp(-||k - k_anchor||^2 / (2 s^2)) with s the anchor group's own key spread; the anchor keeps its position.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class Fold(EvictionMethod):
    name = "fold"
    query_window = 32
    sinks = 4
    likeness = 0.6

    def _head(self, keys, values, pos, scores, budget, fixed):
        t = keys.shape[0]
        if budget >= t:
            return keys, values, pos
        scores = scores.masked_fill(fixed, float("inf"))
        anchors = scores.topk(budget).indices.sort().values                 # (A,)
        is_anchor = torch.zeros(t, dtype=torch.bool, device=keys.device)
        is_anchor[anchors] = True
        others = (~is_anchor).nonzero().squeeze(1)
        right = torch.searchsorted(anchors, others).clamp(max=anchors.numel() - 1)
        left = (right - 1).clamp(min=0)
        unit = F.normalize(keys.float(), dim=-1)
        sim_l = (unit[others] * unit[anchors[left]]).sum(-1)
        sim_r = (unit[others] * unit[anchors[right]]).sum(-1)
        use_r = sim_r > sim_l
        target = torch.where(use_r, right, left)                              # anchor slot per other token
        sim = torch.where(use_r, sim_r, sim_l)
        joins = sim >= self.likeness
        src = torch.cat([anchors, others[joins]])
        slot = torch.cat([torch.arange(anchors.numel(), device=keys.device), target[joins]])
        k = keys.float()
        dist2 = (k[src] - k[anchors[slot]]).pow(2).sum(-1)
        spread = torch.zeros(anchors.numel(), device=k.device).index_put_((slot,), dist2, accumulate=True)
        members = torch.zeros(anchors.numel(), device=k.device).index_put_(
            (slot,), torch.ones_like(dist2), accumulate=True)
        sigma2 = (spread / members).clamp_min(1e-6)
        w = torch.exp(-dist2 / (2 * sigma2[slot]))
        mix = torch.zeros(anchors.numel(), t, device=k.device)
        mix.index_put_((slot, src), w, accumulate=True)
        mix = mix / mix.sum(dim=1, keepdim=True)
        return (mix @ k).to(keys.dtype), (mix @ values.float()).to(values.dtype), pos[anchors]

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        if view.queries is not None:
            scores = view.group(view.attention(reduce="sum"), "mean")
            wstart = view.query_positions.min()
        else:
            scores, wstart = view.positions.float(), view.positions.max() + 1
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            pos = view.positions[h, idx]
            fixed = (pos >= wstart) | (pos < self.sinks)
            k, v, p = self._head(view.keys[h, idx], view.values[h, idx], pos, scores[h, idx],
                                 view.budget, fixed)
            ks.append(k)
            vs.append(v)
            ps.append(p)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
