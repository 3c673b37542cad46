"""Constellations: keep whole neighbourhoods of meaning that the question points at.

Each KV head's keys are grouped into constellations by a few rounds of spherical k-means (directions only,
deterministic seeding at evenly spaced tokens). The question's queries then look at the constellation centres: a
constellation's pull is its size times the softmax weight the question gives its centre, summed over the
question rows of the group. Constellations are taken whole in order of pull; the one that does not fit is cut by
the question's attention to its own members. The question span and the first tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Constellations(EvictionMethod):
    name = "constellations"
    question_queries = True
    query_window = 8
    n_groups = 16
    rounds = 6
    anchor = 4

    def _fit(self, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """keys (T, D) -> (centres (C, D) unit, labels (T,), sizes (C,))."""
        t = keys.shape[0]
        c = min(self.n_groups, t)
        unit = F.normalize(keys, dim=-1)
        seeds = torch.linspace(0, t - 1, c, device=keys.device).round().long()
        centres = unit[seeds]
        labels = torch.zeros(t, dtype=torch.long, device=keys.device)
        for _ in range(self.rounds):
            labels = (unit @ centres.T).argmax(dim=1)
            member = F.one_hot(labels, c).to(unit.dtype)        # (T, C)
            summed = member.T @ unit                             # (C, D)
            empty = member.sum(dim=0) == 0
            summed[empty] = centres[empty]
            centres = F.normalize(summed, dim=-1)
        labels = (unit @ centres.T).argmax(dim=1)
        sizes = F.one_hot(labels, c).sum(dim=0).float()
        return centres, labels, sizes

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        qstart = view.query_positions.min()
        token_attn = view.group(view.attention(reduce="sum"), "mean")   # (H_kv, T): tie-break inside a group
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            pos = view.positions[h, idx]
            fixed = (pos >= qstart) | (torch.arange(idx.numel(), device=idx.device) < self.anchor)
            free = idx[~fixed]
            room = max(0, view.budget - int(fixed.sum()))
            picked = idx[fixed][-view.budget:] if view.budget > 0 else idx[:0]
            if room > 0 and free.numel() > 0:
                keys = view.keys[h, free].float()
                centres, labels, sizes = self._fit(keys)
                q = view.queries[h * g:(h + 1) * g].float().reshape(-1, keys.shape[1])
                # scale the centre by the members' mean norm so the softmax sees key-sized logits
                norm = torch.zeros(centres.shape[0], device=keys.device).scatter_reduce(
                    0, labels, keys.norm(dim=-1), reduce="mean", include_self=False)
                logits = (q @ (centres * norm[:, None]).T) * view.model.scale      # (rows, C)
                pull = (logits.softmax(dim=-1) * sizes).sum(dim=0)
                order = pull.argsort(descending=True)
                rank_of = torch.empty_like(order)
                rank_of[order] = torch.arange(order.numel(), device=order.device)
                # whole constellations first (by pull), members by their own attention inside
                key = rank_of[labels].float() * 1e3 - token_attn[h, free] / (token_attn[h, free].max() + 1e-9)
                take = key.argsort()[:room]
                picked = torch.cat([picked, free[take]])
            out.append(picked.sort().values)
        return Keep(tuple(out))
