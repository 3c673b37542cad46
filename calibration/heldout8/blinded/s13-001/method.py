"""Ballot merging (board C).

A decode-time cache that never simply forgets. Each entry carries a *ballot* (how much original attention weight it
stands for, 1 for a fresh token) and a smoothed heat (an exponential moving average of the attention it receives at
every decode step, beta = 0.9). When a layer is full, the coolest entries (the four opening tokens and the newest 16
excepted) leave, and each leaver is folded into the surviving entry whose key points most nearly the same way. The
fold is weighted so that, for the newest query, the merged entry carries exactly the combined weight
``ballot * exp(q.k * scale)`` of what it replaces: keys and values are the weight-averaged ones, and the merged ballot is
the combined weight divided by ``exp(q.k_merged * scale)``. Ballots and heat follow the entries across evictions.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


def _ema_heat(view: LayerView, beta: float) -> torch.Tensor:
    heat = view.recall("bm_heat")
    if view.queries is None:
        return heat
    seen = view.state.get("bm_seen", -1)
    fresh = view.query_positions > seen
    m = int(fresh.sum())
    if m:
        rows = view.attention(view.queries[:, fresh])                     # (H_q, m, T)
        rows = view.group(rows, "mean")                                   # (H_kv, m, T)
        w = (1 - beta) * beta ** torch.arange(m - 1, -1, -1, device=rows.device, dtype=torch.float32)
        heat = heat * beta ** m + torch.einsum("hmt,m->ht", rows, w)
        view.state["bm_seen"] = int(view.query_positions.max())
    return heat


class BallotMerging(EvictionMethod):
    name = "ballot_merging"
    query_window = 64
    beta = 0.9
    opening = 4
    newest = 16

    def select(self, view: LayerView) -> Rewrite:
        heat = _ema_heat(view, self.beta)
        ballot = view.recall("bm_ballot", fill=1.0)
        valid = view.valid_mask()
        g = view.model.group_size
        q_new = None
        if view.queries is not None:
            q_new = view.queries[:, -1].float().reshape(view.n_kv_heads, g, -1).mean(1)   # (H_kv, D)
        new_heat = torch.zeros_like(heat)
        new_ballot = torch.ones_like(ballot)
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            k, v, p = view.keys[h, :n].float(), view.values[h, :n].float(), view.positions[h, :n]
            hh, bb = heat[h, :n].clone(), ballot[h, :n].clone()
            b = min(view.budget, n)
            rank = hh.clone()
            rank[p < self.opening] = float("inf")
            rank[max(0, n - self.newest):] = float("inf")
            stay = rank.topk(b).indices.sort().values
            leave_mask = torch.ones(n, dtype=torch.bool, device=k.device)
            leave_mask[stay] = False
            leave = torch.nonzero(leave_mask).flatten()
            ks_h, vs_h = k[stay].clone(), v[stay].clone()
            hh_s, bb_s = hh[stay].clone(), bb[stay].clone()
            if leave.numel() and q_new is not None and b > 0:
                sim = F.normalize(k[leave], dim=-1) @ F.normalize(k[stay], dim=-1).T
                host = sim.argmax(dim=1)                                          # index into stay
                scale = view.model.scale
                lg_leave = (k[leave] @ q_new[h]) * scale
                lg_stay = (k[stay] @ q_new[h]) * scale
                top = torch.maximum(lg_leave.max(), lg_stay.max())
                w_leave = bb[leave] * torch.exp(lg_leave - top)
                w_stay = bb_s * torch.exp(lg_stay - top)
                touched = torch.unique(host)
                wsum = w_stay.clone().index_add_(0, host, w_leave)
                ksum = (ks_h * w_stay[:, None]).index_add_(0, host, k[leave] * w_leave[:, None])
                vsum = (vs_h * w_stay[:, None]).index_add_(0, host, v[leave] * w_leave[:, None])
                ks_h[touched] = ksum[touched] / wsum[touched, None]
                vs_h[touched] = vsum[touched] / wsum[touched, None]
                lg_new = (ks_h[touched] @ q_new[h]) * scale
                bb_s[touched] = wsum[touched] / torch.exp(lg_new - top)
                hh_s = hh_s.index_add(0, host, hh[leave])
            ks.append(ks_h), vs.append(vs_h), ps.append(p[stay])
            new_heat[h, : stay.numel()] = hh_s
            new_ballot[h, : stay.numel()] = bb_s
        # carry heat and ballots to the next call, keyed by the surviving positions
        self._carry(view, ps, new_heat, new_ballot)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))

    @staticmethod
    def _carry(view: LayerView, ps, heat, ballot) -> None:
        width = max(p.numel() for p in ps)
        pos = torch.full((len(ps), width), -1, dtype=torch.long, device=heat.device)
        ok = torch.zeros((len(ps), width), dtype=torch.bool, device=heat.device)
        for h, p in enumerate(ps):
            pos[h, : p.numel()] = p
            ok[h, : p.numel()] = True
        view.state["bm_heat"] = (pos, heat[:, :width].clone(), ok)
        view.state["bm_ballot"] = (pos, ballot[:, :width].clone(), ok)
