"""Hourglass: window+question attention scoring with a middle-heavy per-layer budget schedule."""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class Hourglass(EvictionMethod):
    name = "hourglass"
    query_window = 32
    question_queries = True
    depth = 0.5  # amplitude of the schedule: ends get (1 - depth), the middle (1 + depth), before renormalising

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        n = len(model.attention_layers)
        if n < 2 or mean_budget >= n_tokens:  # board C (cap = mean budget) or nothing to move
            return None
        shape = [1.0 - self.depth * math.cos(2 * math.pi * i / (n - 1)) for i in range(n)]
        total = mean_budget * n
        raw = [s * total / sum(shape) for s in shape]
        budgets = [max(1, min(n_tokens, int(r))) for r in raw]
        while sum(budgets) > total:  # clipping at 1 can overspend by a few tokens
            budgets[budgets.index(max(budgets))] -= 1
        return budgets

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")
        s = F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]
        if view.query_positions is not None:
            s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
