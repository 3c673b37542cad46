"""Anchored digest (board B_online).

Query-agnostic compression in two parts. Anchors: the entries the closing context reads most, kept verbatim.
Digest: everything else is summarised into a few slots so that no region of the context disappears entirely;
slot seeds are spread evenly over the non-anchor entries, every other non-anchor entry joins the seed whose key
it resembles most, and each slot is the average of its members.

The four opening entries and the closing 32 (the reading window itself) are kept as they are.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class AnchoredDigest(EvictionMethod):
    name = "anchored_digest"
    query_window = 32
    anchor_share = 0.84
    opening = 4

    def _reads(self, view: LayerView) -> torch.Tensor:
        return view.group(view.attention(reduce="sum"), "mean")

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        reads = self._reads(view) if view.queries is not None else view.positions.float()
        start = int(view.query_positions.min()) if view.query_positions is not None else int(view.positions.max()) + 1
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            m = valid[h]
            k, v, p, r = view.keys[h][m].float(), view.values[h][m].float(), view.positions[h][m], reads[h][m]
            n = k.shape[0]
            if n <= view.budget:
                ks.append(k), vs.append(v), ps.append(p.long())
                continue
            fixed = (p < self.opening) | (p >= start)
            room = view.budget - int(fixed.sum())
            if room <= 0:
                keep = torch.arange(n - view.budget, n, device=k.device)
                ks.append(k[keep]), vs.append(v[keep]), ps.append(p[keep].long())
                continue
            free = (~fixed).nonzero().flatten()
            n_anchor = min(free.numel(), max(1, int(round(room * self.anchor_share))))
            n_slot = room - n_anchor
            anchors = free[r[free].topk(n_anchor).indices]
            rest = free[~torch.isin(free, anchors)]
            parts_k, parts_v, parts_p = [k[fixed], k[anchors]], [v[fixed], v[anchors]], [p[fixed], p[anchors]]
            if n_slot > 0 and rest.numel() > 0:
                n_slot = min(n_slot, rest.numel())
                seeds = rest[torch.linspace(0, rest.numel() - 1, n_slot, device=k.device).round().long().unique()]
                others = rest[~torch.isin(rest, seeds)]
                u = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)
                home = torch.arange(seeds.numel(), device=k.device)
                if others.numel():
                    home_o = (u[others] @ u[seeds].T).argmax(dim=1)
                    members = torch.cat([seeds, others])
                    home = torch.cat([home, home_o])
                else:
                    members = seeds
                cnt = torch.zeros(seeds.numel(), device=k.device).index_add_(0, home, torch.ones_like(home, dtype=torch.float32))
                sk = torch.zeros(seeds.numel(), k.shape[1], device=k.device).index_add_(0, home, k[members]) / cnt[:, None]
                sv = torch.zeros(seeds.numel(), v.shape[1], device=k.device).index_add_(0, home, v[members]) / cnt[:, None]
                parts_k.append(sk), parts_v.append(sv), parts_p.append(p[seeds])
            allk, allv, allp = torch.cat(parts_k), torch.cat(parts_v), torch.cat(parts_p)
            order = allp.argsort()
            ks.append(allk[order]), vs.append(allv[order]), ps.append(allp[order].long())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
