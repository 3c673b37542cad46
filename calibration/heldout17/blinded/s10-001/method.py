"""Guarded-peak retention (board A, question-aware prefill).

Summing or averaging the question rows' attention is an average-case bet: a token that one row needs badly can lose
to tokens that every row likes a little. We take the guarded view instead: a token is scored by the largest weight any
question row (the question span and the closing 8 rows, causal) gives it, with a small share (0.1) of the mean as a
tie-breaker, then the maximum over the KV head's query heads, so no row and no head is left uncovered. The scores are
max-pooled (width 5). The question span and the 4 opening tokens are always kept.

At very small budgets (64 tokens or fewer per head) the question span and its neighbourhood already use most of the
room; there we keep the opening tokens and the newest tokens, which hold the question and what immediately precedes
it.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class GuardedPeak(EvictionMethod):
    name = "guarded_peak"
    question_queries = True
    query_window = 8
    mean_share = 0.1
    kernel = 5
    opening = 4
    small_budget = 64

    def _tail(self, view: LayerView) -> Keep:
        score = view.positions.float().masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or view.budget <= self.small_budget:
            return self._tail(view)
        peak = view.attention(reduce="max").float()  # (H_q, T): the worst-served row's need
        mean = view.attention(reduce="mean").float()
        score = view.group(peak + self.mean_share * mean, "max")
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        pinned = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
