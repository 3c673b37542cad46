"""Residual-basis retention (board B_online).

Eviction throws away everything it does not keep. We keep a sparse set (4 opening tokens, the last 32 context
tokens, the rest of the budget by window attention) and spend a few slots per head on what was dropped: the dropped
keys are summarised by their leading directions (a weighted SVD of the centred dropped keys, weights = the window
attention they received), and each direction becomes one synthetic entry whose key is the dropped mean moved along
that direction by its spread, and whose value is the dropped values read out by that key. The synthetic entries sit
at the weighted mean position of the dropped tokens they summarise.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite

SINKS = 4
RECENT = 32
RANK = 4


def _residual_slots(k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, w: torch.Tensor, rank: int, scale: float):
    """Summarise dropped entries (n, D) into ``rank`` synthetic (key, value, position) rows."""
    w = w.clamp_min(1e-8)
    w = w / w.sum()
    mean_k = (w[:, None] * k).sum(0)
    centred = (k - mean_k) * w.sqrt()[:, None]
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)
    r = min(rank, vh.shape[0])
    keys, vals, where = [], [], []
    for j in range(r):
        direction = vh[j]
        sign = torch.sign((centred @ direction).sum()) or torch.tensor(1.0)
        key = mean_k + sign * s[j] * direction
        read = torch.softmax((k @ key) * scale + w.log(), dim=0)
        vals.append((read[:, None] * v).sum(0))
        keys.append(key)
        where.append(int(torch.round((read * pos.float()).sum())))
    return keys, vals, where


class ResidualBasisRetention(EvictionMethod):
    name = "residual_basis_retention"
    query_window = 32

    def select(self, view: LayerView):
        t = view.n_tokens
        if view.budget >= t or view.queries is None or view.valid is not None or view.budget <= SINKS + RANK + 1:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        mass = view.group(view.attention(reduce="sum"), "mean")            # (H_kv, T)
        sparse = view.budget - RANK
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            score = mass[h].clone()
            score[:SINKS] = float("inf")
            score[max(0, t - min(RECENT, sparse - SINKS)):] = float("inf")
            kept = score.topk(sparse).indices
            drop = torch.ones(t, dtype=torch.bool, device=score.device)
            drop[kept] = False
            k_all, v_all = view.keys[h].float(), view.values[h].float()
            extra_k, extra_v, extra_p = [], [], []
            if int(drop.sum()) > RANK:
                extra_k, extra_v, extra_p = _residual_slots(k_all[drop], v_all[drop], view.positions[h][drop],
                                                            mass[h][drop], RANK, view.model.scale)
            pos = torch.cat([view.positions[h][kept], torch.tensor(extra_p, dtype=torch.long, device=score.device)])
            kk = torch.cat([k_all[kept]] + [x[None] for x in extra_k])
            vv = torch.cat([v_all[kept]] + [x[None] for x in extra_v])
            order = pos.argsort(stable=True)
            ks.append(kk[order].to(view.keys.dtype))
            vs.append(vv[order].to(view.values.dtype))
            ps.append(pos[order])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
