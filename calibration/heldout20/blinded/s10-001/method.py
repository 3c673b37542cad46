"""Weighted-yield selection (board A, question-aware prefill).

A cached token contributes to an attention output by its weight times its value: a token the question attends to but
whose value vector is tiny changes nothing when it is dropped. Weighted-yield selection scores each token by the
attention it receives from the question span and the prompt's last rows, summed, times the L1 size of its value
vector (its yield), and keeps the top-yield tokens per KV head with the four opening tokens pinned.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class WeightedYieldSelection(EvictionMethod):
    name = "weighted_yield"
    query_window = 32
    question_queries = True
    pinned = 4
    run = 64              # a fresh contiguous run is cheaper to gather on short budgets

    def _freshest(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.positions.float(), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.budget <= self.run:
            return self._freshest(view)
        weight = view.group(view.attention(reduce="sum"), "sum")       # (H_kv, T)
        size = view.values.float().abs().sum(dim=-1)                   # (H_kv, T)
        yield_ = weight * size
        yield_[:, : self.pinned] = float("inf")
        return Keep.from_topk(yield_, view.budget, view.valid)
