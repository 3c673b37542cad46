"""Ballot Merge: at each cap, evicted tokens are merged into the survivor they resemble, and every survivor
remembers how many tokens it now stands for.

The newest queries' attention (mean over queries and the group) ranks tokens; sinks and a recent window
stay. Each evicted token joins the kept token whose key it is closest to (cosine). A survivor carries a
vote count (how many original tokens it represents, carried across caps by position), and a merge
combines values weighted by votes x attention. The merged key is not averaged: it is solved so that the
newest query's attention output is exactly what it was before the merge (zero perturbation at merge time).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class BallotMerge(EvictionMethod):
    name = "ballot_merge"
    query_window = 32
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        votes = view.recall("votes", fill=1.0)
        if view.queries is not None:
            att = view.group(view.attention(reduce="mean"), "mean").float()
        else:
            att = torch.ones(votes.shape)
        ks, vs, ps, vt = [], [], [], []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(-1)
            n, b = idx.numel(), min(view.budget, idx.numel())
            pri = att[h, idx].clone()
            pri[: min(self.sinks, n)] = float("inf")
            pri[max(0, n - self.recent):] = float("inf")
            keep = pri.topk(b).indices.sort().values
            k = view.keys[h, idx].float()
            v = view.values[h, idx].float()
            weight = votes[h, idx] * att[h, idx].clamp_min(1e-6)
            out_k, out_v, out_n = k[keep].clone(), v[keep].clone(), votes[h, idx][keep].clone()
            if 0 < b < n:
                gone = torch.ones(n, dtype=torch.bool)
                gone[keep] = False
                gi = gone.nonzero().squeeze(-1)
                to = (F.normalize(k[gi], dim=-1) @ F.normalize(k[keep], dim=-1).T).argmax(dim=-1)
                wk = weight[keep].clone()
                acc_v = out_v * wk[:, None]
                acc_k = out_k * wk[:, None]
                acc_v.index_add_(0, to, v[gi] * weight[gi][:, None])
                acc_k.index_add_(0, to, k[gi] * weight[gi][:, None])
                tot = wk.index_add(0, to, weight[gi])
                out_v, out_k = acc_v / tot[:, None], acc_k / tot[:, None]
                out_n = out_n.index_add(0, to, votes[h, idx][gi])
            ks.append(out_k.to(view.keys.dtype)); vs.append(out_v.to(view.values.dtype))
            ps.append(view.positions[h, idx][keep]); vt.append(out_n)
        # carry the vote counts by position to the next call
        width = max(p.numel() for p in ps)
        pos_pad = torch.full((len(ps), width), -1, dtype=view.positions.dtype)
        val_pad = torch.zeros(len(ps), width)
        ok = torch.zeros(len(ps), width, dtype=torch.bool)
        for h, (p, c) in enumerate(zip(ps, vt)):
            pos_pad[h, : p.numel()] = p
            val_pad[h, : p.numel()] = c
            ok[h, : p.numel()] = True
        view.state["votes"] = (pos_pad, val_pad, ok)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
