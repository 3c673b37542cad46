"""Steady-and-spiky salience (board B_online, query-agnostic prefill).

A token the closing rows of the context all attend to a little is worth keeping; so is one that a few of them
attend to a lot while the others ignore it, because the next rows may be the ones that need it. The first kind
shows in the average attention a token gets over the closing rows, the second in how much that attention
swings from row to row. The salience of a token is its average plus a strongly weighted spread (the variance
across rows, times 200), smoothed over 5 neighbours; the closing rows themselves are kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class _RowStats:
    """Per KV head: mean and variance over the closing rows of each key's attention (query heads pooled)."""

    def __init__(self, attn: torch.Tensor, group: int) -> None:
        h_q, n, t = attn.shape
        pooled = attn.reshape(h_q // group, group * n, t)          # every row of every query head of the group
        self.var, self.mean = torch.var_mean(pooled, dim=1, unbiased=False)


class SteadyAndSpiky(EvictionMethod):
    name = "steady_and_spiky"
    query_window = 32
    spread_weight = 200.0
    smooth = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        stats = _RowStats(view.attention(), view.model.group_size)
        salience = stats.mean + self.spread_weight * stats.var
        salience = F.avg_pool1d(salience.unsqueeze(1), self.smooth, stride=1, padding=self.smooth // 2).squeeze(1)
        salience = salience.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(salience, view.budget, view.valid)
