"""Constellations: the question picks neighbourhoods of keys, not single keys.

Each KV head's context keys are grouped into constellations (spherical k-means on unit keys, seeded from evenly
spaced keys, a few refinement rounds). The question's queries look at the constellation centres; constellations
are taken in order of the attention their centres draw (weighted by how many keys they hold) and all their
members are kept until the budget is spent, the last constellation taken only in part (its members closest to
the question first). The question span and the opening tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def _spherical_kmeans(x: torch.Tensor, k: int, rounds: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (n, d) unit rows -> (centres (k, d), assignment (n,))."""
    seeds = torch.linspace(0, x.shape[0] - 1, k, device=x.device).round().long()
    centres = x[seeds].clone()
    assign = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
    for _ in range(rounds):
        assign = torch.cdist(x, centres).argmin(dim=1)
        summed = torch.zeros_like(centres).index_add_(0, assign, x)
        empty = torch.bincount(assign, minlength=k) == 0
        centres = torch.where(empty[:, None], centres, F.normalize(summed, dim=-1))
    return centres, assign


class Constellations(EvictionMethod):
    name = "constellations"
    question_queries = True
    query_window = 8
    per_cluster = 16
    rounds = 6
    n_open = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        fixed = (view.positions < self.n_open) | (view.positions >= view.query_positions.min())
        q = view.queries.float().reshape(view.n_kv_heads, g * view.queries.shape[1], -1)
        out = []
        for h in range(view.n_kv_heads):
            base = torch.nonzero(valid[h] & fixed[h]).flatten()[: view.budget]
            cand = torch.nonzero(valid[h] & ~fixed[h]).flatten()
            room = view.budget - base.numel()
            if room <= 0 or cand.numel() == 0:
                out.append(base)
                continue
            raw = view.keys[h, cand].float()
            k = max(1, -(-cand.numel() // self.per_cluster))
            centres, assign = _spherical_kmeans(F.normalize(raw, dim=-1), k, self.rounds)
            sizes = torch.bincount(assign, minlength=k).float()
            norms = torch.zeros(k, device=raw.device).scatter_reduce(0, assign, raw.norm(dim=-1), "amax")
            pull = (q[h] @ (centres * norms[:, None]).T * view.model.scale).softmax(dim=-1).sum(dim=0)
            order = (pull * sizes).argsort(descending=True)
            member_score = (raw @ q[h].T).amax(dim=1)
            picked = []
            for c in order.tolist():
                members = cand[assign == c]
                if room <= 0:
                    break
                if members.numel() > room:
                    members = members[member_score[assign == c].topk(room).indices]
                picked.append(members)
                room -= members.numel()
            out.append(torch.cat([base, *picked]).sort().values)
        return Keep(tuple(out))
