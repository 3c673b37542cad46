"""Remainder-slot retention (board B_offline).

Everything an eviction method drops is lost for good; at 10 % budgets that is most of the context. We keep the
best-read tokens as they are and collapse *all* the rest of a KV head into a single remainder slot, a convex
combination of the dropped keys and values weighted by how much they were read, so the attention that used to
go to the long tail still finds something that points the right way.

Reading signal: the one-off context-repeat pass (the harness's reconstruction queries): each token's read mass is
the mean attention the repeat queries pay it, averaged over the KV head's query heads. Per KV head, the
budget - 1 tokens with the largest read mass are kept (four opening and the newest 16 always among them); the
remainder slot = sum_i m_i (k_i, v_i) / sum_i m_i over the other tokens, placed at the position of the heaviest
of them.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class RemainderSlot(EvictionMethod):
    name = "remainder_slot"
    reconstruction_queries = True
    query_window = 32
    opening = 4
    newest = 16

    def _read_mass(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return torch.ones(view.keys.shape[:2], device=view.keys.device)
        return view.group(view.attention(reduce="mean"), "mean")

    def select(self, view: LayerView) -> Rewrite:
        mass = self._read_mass(view)
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            m = valid[h]
            k, v, p, w = view.keys[h][m].float(), view.values[h][m].float(), view.positions[h][m], mass[h][m]
            n = k.shape[0]
            if n <= view.budget:
                ks.append(k), vs.append(v), ps.append(p.long())
                continue
            rank = w.clone()
            rank[: min(self.opening, n)] = float("inf")
            rank[max(0, n - self.newest):] = float("inf")
            slots = max(0, view.budget - 1)
            kept = rank.topk(slots).indices if slots else torch.empty(0, dtype=torch.long, device=k.device)
            rest = torch.ones(n, dtype=torch.bool, device=k.device)
            rest[kept] = False
            if view.budget >= 1 and bool(rest.any()):
                wr = w[rest].clamp_min(1e-12)
                share = wr / wr.sum()
                fk = (share[:, None] * k[rest]).sum(dim=0, keepdim=True)
                fv = (share[:, None] * v[rest]).sum(dim=0, keepdim=True)
                fp = p[rest][wr.argmax()].view(1)
                allk, allv, allp = torch.cat([k[kept], fk]), torch.cat([v[kept], fv]), torch.cat([p[kept], fp])
            else:
                allk, allv, allp = k[kept], v[kept], p[kept]
            order = allp.argsort()
            ks.append(allk[order]), vs.append(allv[order]), ps.append(allp[order].long())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
