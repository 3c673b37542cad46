"""Constellations: keep whole neighbourhoods of the key space that the context's re-reading visits.

The keys of a head are grouped into constellations (a few Lloyd rounds from evenly spaced seeds). The one-off
re-reading pass then looks at the constellations instead of the tokens: each re-reading query spreads one unit
of attention over the constellations' centres (a centre counts as many times as it has members), and a
constellation's brightness is the mass it collects. Tokens inherit their constellation's brightness, with their
own key's dot product with the mean re-reading query breaking ties inside it; the brightest are kept.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


def _lloyd(points: torch.Tensor, n_groups: int, rounds: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """points (T, D) -> centres (C, D), membership (T,)."""
    t = points.shape[0]
    seeds = torch.linspace(0, t - 1, n_groups, device=points.device).round().long()
    centres = points[seeds].clone()
    member = torch.zeros(t, dtype=torch.long, device=points.device)
    for _ in range(rounds):
        d = torch.cdist(points, centres)
        member = d.argmin(dim=1)
        onehot = torch.zeros(t, n_groups, device=points.device)
        onehot[torch.arange(t, device=points.device), member] = 1.0
        sizes = onehot.sum(dim=0)
        sums = onehot.T @ points
        moved = sums / sizes.clamp_min(1)[:, None]
        centres = torch.where(sizes[:, None] > 0, moved, centres)
    return centres, member


class Constellations(EvictionMethod):
    name = "constellations"
    reconstruction_queries = True
    tokens_per_group = 24
    max_groups = 64

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        scale = view.model.scale
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            keys = view.keys[h, real].float()
            n_groups = max(2, min(self.max_groups, math.ceil(keys.shape[0] / self.tokens_per_group)))
            n_groups = min(n_groups, keys.shape[0])
            centres, member = _lloyd(keys, n_groups)
            sizes = torch.bincount(member, minlength=n_groups).float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, keys.shape[1])   # (g*N, D)
            logits = (q @ centres.T) * scale + sizes.clamp_min(1).log()[None, :]
            logits = logits.masked_fill(sizes[None, :] == 0, float("-inf"))
            brightness = logits.softmax(dim=-1).sum(dim=0)                          # (C,)
            inside = keys @ q.mean(dim=0)
            inside = (inside - inside.min()) / (inside.max() - inside.min() + 1e-6)
            token = brightness[member] + 1e-3 * inside
            scores = torch.full((view.n_tokens,), float("-inf"), device=view.keys.device)
            scores[real] = token
            k = min(view.budget, real.numel())
            out.append(scores.topk(k).indices.sort().values)
        return Keep(tuple(out))
