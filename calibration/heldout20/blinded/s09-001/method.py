"""Carry-forward selection (board A, question-aware prefill).

SnapKV ranks each context token by the attention the question (and the prompt's last rows) pays to it, then smooths
the scores with a symmetric max-pool so that neighbours of a hit survive too. In retrieval prompts the question
matches the *key* of a fact ("the special magic number for X is") while the answer sits in the tokens right after
it. Carry-forward selection therefore smooths in one direction only: a token inherits a decayed share of the score of
the two tokens before it (max with its own), so the continuation of a matched span is kept and the budget is not
spent on the tokens before the match.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class CarryForwardSelection(EvictionMethod):
    name = "carry_forward"
    query_window = 16
    question_queries = True
    decay = (0.8, 0.5)        # share inherited from the token 1 and 2 places back
    opening = 4

    def select(self, view: LayerView) -> Keep:
        base = view.group(view.attention(reduce="mean"), "mean")        # (H_kv, T)
        carried = base.clone()
        for lag, share in enumerate(self.decay, start=1):
            shifted = torch.zeros_like(base)
            shifted[:, lag:] = base[:, :-lag] * share
            carried = torch.maximum(carried, shifted)
        if view.queries is not None and view.query_positions is not None:
            closing = int(view.query_positions[-self.query_window:].min())          # the prompt's last rows
            carried = carried.masked_fill(view.positions >= closing, float("inf"))
        carried[:, : self.opening] = float("inf")
        return Keep.from_topk(carried, view.budget, view.valid)
