"""Thrifty head profiles (board B_online, query-agnostic prefill).

Heads differ in what they need: some look only at the opening tokens, some only at their neighbourhood, some at a
few loud entries anywhere. Thrifty profiles try the cheapest description of a head first and move on to a richer
one only when the cheap one fails to cover what the head actually attends to; a head whose needs are covered by a
small set keeps only that set, and its memory is freed.
"""

from __future__ import annotations

from typing import Callable

import torch

from harness import EvictionMethod, Keep, LayerView

Profile = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]


def _openers(mass: torch.Tensor, order: torch.Tensor, n: int) -> torch.Tensor:
    return order[: min(n, 4)]


def _openers_and_local(frac: float) -> Profile:
    def pick(mass: torch.Tensor, order: torch.Tensor, n: int) -> torch.Tensor:
        w = max(1, int(frac * order.numel()))
        return torch.cat([order[:4], order[-w:]]).unique()
    return pick


def _openers_local_loud(frac: float) -> Profile:
    def pick(mass: torch.Tensor, order: torch.Tensor, n: int) -> torch.Tensor:
        w = max(1, int(frac * order.numel()))
        base = torch.cat([order[:4], order[-w:]]).unique()
        rest = mass.clone()
        rest[base] = float("-inf")
        extra = rest.topk(max(0, min(n - base.numel(), int(frac * order.numel())))).indices
        return torch.cat([base, extra]).unique()
    return pick


class ThriftyProfiles(EvictionMethod):
    name = "thrifty_profiles"
    query_window = 32
    cover = 0.95
    ladder: tuple[Profile, ...] = (_openers, _openers_and_local(0.05), _openers_and_local(0.1),
                                   _openers_local_loud(0.05), _openers_local_loud(0.1), _openers_local_loud(0.2))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()                                    # (H_q, N, T)
        mass = view.group(probs.sum(dim=1), "mean")
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            m = mass[h, live]
            order = torch.arange(live.numel(), device=m.device)
            rows = probs[h * view.model.group_size:(h + 1) * view.model.group_size][..., live]
            total = rows.sum(-1).clamp(min=1e-9)
            chosen = None
            for profile in self.ladder:
                s = profile(m, order, view.budget)
                if s.numel() > view.budget:
                    break
                covered = (rows[..., s].sum(-1) / total).min()
                if covered >= self.cover:
                    chosen = s
                    break
            if chosen is None:                                      # no thrifty profile suffices: the loudest
                keep = m.clone()
                keep[order[-8:]] = float("inf")
                chosen = keep.topk(min(view.budget, live.numel())).indices
            out.append(live[chosen].sort().values)
        return Keep(tuple(out))
