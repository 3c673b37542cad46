"""Steady And Shifting: a token is worth keeping if the closing queries attend to it a lot, or unevenly.

Window attention averaged over the closing queries says which tokens are read; how much that attention
varies from one closing query to the next says which tokens some queries suddenly need. Each token scores
its mean attention plus `gamma` times its standard deviation over the window's queries, averaged over the
group and smoothed; the window itself is always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SteadyAndShifting(EvictionMethod):
    name = "steady_and_shifting"
    query_window = 32
    gamma = 200.0
    guard = 128

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention()  # (H_q, W, T)
        level = a.mean(dim=1)
        swing = a.var(dim=1, unbiased=False)
        score = view.group(level + self.gamma * swing, "mean")
        score = F.avg_pool1d(score[:, None], 5, stride=1, padding=2, count_include_pad=False)[:, 0]
        closing = view.positions > view.query_positions.max() - self.guard
        return Keep.from_topk(score.masked_fill(closing, float("inf")), view.budget, view.valid)
