"""Outlier-vote retention with neighbourhood absorption (board A).

Question-aware compression in two steps.

Nomination: the question reads a handful of tokens far more than the rest; we let the attention distribution
itself say how many, instead of fixing a top-k. Tokens whose question attention is an outlier are nominated;
the remaining budget is spread evenly over the context so that no region is left empty.

Absorption: each nominated token then absorbs its closest neighbours in the cache, so that what it stood
next to is not lost with them: its key and value become an attention-weighted average over itself and its
nearest entries.

The closing 16 prompt rows and four opening tokens are kept unchanged.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class OutlierVote(EvictionMethod):
    name = "outlier_vote"
    query_window = 16
    question_queries = True
    whisker = 1.5
    neighbours = 8
    opening = 4
    closing = 16

    def _scores(self, view: LayerView) -> torch.Tensor:
        return view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)

    def _nominate(self, s: torch.Tensor, free: torch.Tensor, room: int) -> torch.Tensor:
        vals = s[free]
        q1, q3 = torch.quantile(vals, 0.25), torch.quantile(vals, 0.75)
        fence = q3 + self.whisker * (q3 - q1)
        out = free[vals > fence]
        if out.numel() > room:
            out = out[s[out].topk(room).indices]
        short = room - out.numel()
        if short > 0:
            rest = free[~torch.isin(free, out)]
            if rest.numel():
                even = torch.linspace(0, rest.numel() - 1, min(short, rest.numel()), device=s.device).round().long()
                out = torch.cat([out, rest[even.unique()]])
        return out

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        s_all = self._scores(view) if view.queries is not None else view.positions.float()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            m = valid[h]
            k, v, p, s = view.keys[h][m].float(), view.values[h][m].float(), view.positions[h][m], s_all[h][m]
            n = k.shape[0]
            if n <= view.budget:
                ks.append(k), vs.append(v), ps.append(p.long())
                continue
            idx = torch.arange(n, device=k.device)
            lo, hi = min(self.opening, n), max(min(self.opening, n), n - self.closing)
            fixed = torch.cat([idx[:lo], idx[hi:]])
            room = view.budget - fixed.numel()
            if room <= 0:
                keep = idx[n - view.budget:]
                ks.append(k[keep]), vs.append(v[keep]), ps.append(p[keep].long())
                continue
            picked = self._nominate(s, idx[lo:hi], room)
            u = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)
            near = (u[picked] @ u.T).topk(min(self.neighbours, n), dim=-1).indices  # (P, nb), self included
            w = s[near].clamp_min(1e-9)
            w = w / w.sum(dim=-1, keepdim=True)
            nk = (w[..., None] * k[near]).sum(dim=1)
            nv = (w[..., None] * v[near]).sum(dim=1)
            allk, allv = torch.cat([k[fixed], nk]), torch.cat([v[fixed], nv])
            allp = torch.cat([p[fixed], p[picked]])
            order = allp.argsort()
            ks.append(allk[order]), vs.append(allv[order]), ps.append(allp[order].long())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
