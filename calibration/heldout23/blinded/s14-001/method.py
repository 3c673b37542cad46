"""Reach-weighted head shares (board A, question-aware prefill).

Not every KV head reads the far context: some only look at the question and the last few lines, others go
looking for facts hundreds of tokens back. This method measures, per KV head, how much of the question's
attention lands on distant tokens ("reach"), gives every head a fixed floor of the layer's slots and hands out
the rest of the layer's slots in proportion to reach. Inside a head, tokens are ranked by the question's
attention, smoothed over a few neighbours; the question rows and the opening tokens always stay.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class _Ledger:
    """Turns per-head reach into per-head slot counts that add up exactly to the layer's total."""

    def __init__(self, floor_share: float) -> None:
        self.floor_share = floor_share

    def split(self, reach: torch.Tensor, per_head: int, room: torch.Tensor) -> torch.Tensor:
        n = reach.numel()
        total = per_head * n
        floor = int(per_head * self.floor_share)
        counts = torch.full((n,), floor, dtype=torch.long)
        pool = total - floor * n
        w = reach.clamp_min(1e-6).double().cpu()
        w = w / w.sum()
        raw = w * pool
        extra = raw.floor().long()
        left = pool - int(extra.sum())
        if left > 0:  # largest remainders first
            order = torch.argsort(raw - raw.floor(), descending=True)
            extra[order[:left]] += 1
        counts = counts + extra
        cap = room.cpu().long()
        # a head cannot keep more than it holds: pass the surplus on to heads that still have room
        for _ in range(n):
            over = (counts - cap).clamp_min(0)
            spill = int(over.sum())
            counts = torch.minimum(counts, cap)
            if spill == 0:
                break
            free = (cap - counts).clamp_min(0)
            if int(free.sum()) == 0:
                break
            give = (free.double() / free.sum() * spill).floor().long()
            counts = counts + torch.minimum(give, free)
            rest = spill - int(torch.minimum(give, free).sum())
            for i in torch.argsort(free, descending=True).tolist():
                if rest <= 0:
                    break
                add = min(rest, int(cap[i] - counts[i]))
                counts[i] += add
                rest -= add
        return counts


class ReachWeightedShares(EvictionMethod):
    name = "reach_weighted_shares"
    query_window = 24
    question_queries = True
    floor_share = 0.35     # every head keeps at least this share of the mean per-head budget
    near = 128             # tokens closer than this to the question do not count as reach
    smooth = 5
    opening = 4

    def setup(self, model) -> None:
        self._ledger = _Ledger(self.floor_share)

    def _reach(self, probs: torch.Tensor, pos: torch.Tensor, qmin: int, group: int) -> torch.Tensor:
        """(H_q, R, T) attention -> (H_kv,) mass on tokens older than `near` before the question rows."""
        far = (pos < qmin - self.near) & (pos >= self.opening)           # (H_kv, T)
        far_q = far.repeat_interleave(group, dim=0)[:, None, :]           # (H_q, 1, T)
        mass = (probs * far_q).sum(-1).mean(-1)                           # (H_q,)
        return mass.view(-1, group).mean(-1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_ledger"):
            self.setup(view.model)
        g = view.model.group_size
        probs = view.attention()                                          # (H_q, R, T)
        qmin = int(view.query_positions.min())
        reach = self._reach(probs, view.positions, qmin, g)
        ok = view.valid_mask()
        counts = self._ledger.split(reach, view.budget, ok.sum(-1))
        col = probs.sum(1).view(view.n_kv_heads, g, -1).mean(1)          # (H_kv, T)
        col = F.avg_pool1d(col.unsqueeze(1), self.smooth, 1, self.smooth // 2, count_include_pad=False).squeeze(1)
        pinned = (view.positions >= qmin) | (view.positions < self.opening)
        col = torch.where(pinned, col + 1e4, col)
        return Keep.from_topk(col, counts, view.valid)
