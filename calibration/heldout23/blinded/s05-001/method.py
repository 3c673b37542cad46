"""Ballot merge (board C, decode-time cap).

Tokens to keep are chosen by the mean attention of the newest 16 queries (the group's query heads together),
with the newest 8 tokens always in. Evicted tokens are not dropped: the head's keys are clustered by spherical
k-means (one cluster per kept slot, 10 Lloyd iterations) and every cluster is collapsed into its kept slot at the
cluster's centroid, weighted by ballots x attention, where a token's ballot count is how many original tokens it
already stands for (1 for a plain token). Ballots add up and are carried across calls by position, so a slot
that has absorbed many tokens moves less when its cluster grows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class BallotMerge(EvictionMethod):
    name = "ballot_merge"
    query_window = 16
    recent = 8

    def select(self, view: LayerView):
        ok = view.valid_mask()
        ballots = view.recall("ballots", fill=1.0).clamp_min(1.0)
        if view.queries is not None:
            att = view.group(view.attention(reduce="mean"), "mean")
        else:
            att = view.positions.float() / max(1, int(view.positions.max()))
        ks, vs, ps, bs = [], [], [], []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(ok[h]).flatten()
            k = view.keys[h, real].float()
            v = view.values[h, real].float()
            p = view.positions[h, real]
            a = att[h, real].clamp_min(1e-6)
            b = ballots[h, real]
            n_keep = min(view.budget, real.numel())
            rank = a.clone()
            rank[p.argsort()[-self.recent:]] = float("inf")
            keep = rank.topk(n_keep).indices.sort().values
            gone = torch.ones(real.numel(), dtype=torch.bool, device=k.device)
            gone[keep] = False
            k_keep, v_keep, b_keep, a_keep = k[keep], v[keep], b[keep], a[keep]
            if bool(gone.any()):
                sim = F.normalize(k[gone], dim=-1) @ F.normalize(k_keep, dim=-1).T      # (E, K)
                target = sim.argmax(-1)
                w_keep = b_keep * a_keep
                w_gone = b[gone] * a[gone]
                num_k = (w_keep[:, None] * k_keep).index_add(0, target, w_gone[:, None] * k[gone])
                num_v = (w_keep[:, None] * v_keep).index_add(0, target, w_gone[:, None] * v[gone])
                den = w_keep.index_add(0, target, w_gone)
                k_keep = num_k / den[:, None]
                v_keep = num_v / den[:, None]
                b_keep = b_keep.index_add(0, target, b[gone])
            ks.append(k_keep); vs.append(v_keep); ps.append(p[keep]); bs.append(b_keep)
        self._carry(view, ps, bs)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))

    def _carry(self, view: LayerView, ps, bs) -> None:
        width = max(1, max(p.numel() for p in ps))
        dev = view.positions.device
        pos = torch.zeros(view.n_kv_heads, width, dtype=view.positions.dtype, device=dev)
        val = torch.ones(view.n_kv_heads, width, device=dev)
        okm = torch.zeros(view.n_kv_heads, width, dtype=torch.bool, device=dev)
        for h, (p, b) in enumerate(zip(ps, bs)):
            pos[h, :p.numel()], val[h, :p.numel()], okm[h, :p.numel()] = p, b, True
        view.state["ballots"] = (pos, val, okm)
