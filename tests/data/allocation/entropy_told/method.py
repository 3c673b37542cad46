"""Entropy-told budgets (written for tests/test_allocation.py): the description says each head's share of the layer
budget follows the entropy of its window attention; the code computes that entropy and then keeps the same number of
tokens in every head (the share is never used), ranking by the window attention."""

import torch

from harness import EvictionMethod, Keep, LayerView


class EntropyTold(EvictionMethod):
    name = "entropy_told"
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.group(view.attention().mean(1), "max")
        p = a / a.sum(-1, keepdim=True).clamp_min(1e-9)
        ent = -(p * p.clamp_min(1e-12).log()).sum(-1)
        self.last_share = (ent / ent.sum().clamp_min(1e-9)).tolist()  # recorded, never applied
        score = a.clone()
        score[:, :4] = float("inf")
        score[:, t - 24:] = float("inf")
        return Keep.from_topk(score, b, view.valid)
