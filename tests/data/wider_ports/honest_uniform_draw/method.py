"""Lottery with a tail: a uniform random share of the older tokens plus the newest ones."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Lottery(EvictionMethod):
    name = "lottery"
    tail = 32

    def select(self, view: LayerView) -> Keep:
        h, n = view.n_kv_heads, view.n_tokens
        score = torch.rand(h, n)
        score[:, n - self.tail:] = 2.0
        return Keep.from_topk(score, view.budget, view.valid)
