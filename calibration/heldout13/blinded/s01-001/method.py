"""Lattice folding (board B_online).

Query-agnostic compression that folds redundant cache entries into their neighbours instead of dropping them.
The evictable part of each KV head (everything but four opening entries and the newest 16) is laid on a
two-colour lattice by parity of rank: "movers" and "anchors" alternate. Every mover looks for the anchor whose
key points the most the same way (cosine); the strongest links are folded, the mover's key and value entering
the anchor's as a count-weighted average, so a folded anchor stands for the run of text it absorbed. Folding
repeats on the shrunken lattice until the head is within its budget.

Nothing here looks at attention: it needs no queries, so the context can be compressed before any question.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6)


class LatticeFolding(EvictionMethod):
    name = "lattice_folding"
    opening = 4
    tail = 16

    def _fold_head(self, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, target: int):
        mass = torch.ones(k.shape[0], dtype=torch.float32, device=k.device)
        k, v = k.float(), v.float()
        while k.shape[0] > target:
            n = k.shape[0]
            lo, hi = min(self.opening, n), max(min(self.opening, n), n - self.tail)
            free = torch.arange(lo, hi, device=k.device)
            movers, anchors = free[0::2], free[1::2]
            if movers.numel() == 0 or anchors.numel() == 0:
                break
            need = min(n - target, movers.numel())
            link = _unit(k[movers]) @ _unit(k[anchors]).transpose(0, 1)
            strength, partner = link.max(dim=-1)
            chosen = strength.sort(descending=True).indices[:need]
            src, dst = movers[chosen], anchors[partner[chosen]]
            wk, wv = k * mass[:, None], v * mass[:, None]
            wk.index_add_(0, dst, wk[src])
            wv.index_add_(0, dst, wv[src])
            mass = mass.index_add(0, dst, mass[src])
            stay = torch.ones(n, dtype=torch.bool, device=k.device)
            stay[src] = False
            mass = mass[stay]
            k, v, pos = wk[stay] / mass[:, None], wv[stay] / mass[:, None], pos[stay]
        if k.shape[0] > target:  # lattice exhausted (tiny budgets): keep the newest entries
            k, v, pos = k[-target:], v[-target:], pos[-target:]
        return k, v, pos

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            m = valid[h]
            k, v, pos = view.keys[h][m], view.values[h][m], view.positions[h][m]
            if k.shape[0] > view.budget:
                k, v, pos = self._fold_head(k, v, pos, max(1, view.budget))
            ks.append(k.float())
            vs.append(v.float())
            ps.append(pos.long())
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
