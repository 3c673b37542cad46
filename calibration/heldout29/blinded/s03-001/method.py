"""Bulwark: rank context entries by the most any recent reader wanted them, not by what readers wanted on average.

A query-agnostic score has to guess which entries the unseen questions will need. Averaging the closing rows'
attention assumes those rows are a fair sample of the future; one unusual future row then finds its key gone. Here
each entry is rated by its *peak* weight over every closing row of every query head that shares its KV head (the
worst case the cache must survive), plus the plain mean over the same rows as a floor for entries that are wanted a
little by everyone. The closing rows themselves are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class Bulwark(EvictionMethod):
    name = "bulwark"
    query_window = 32

    def _ratings(self, view: LayerView) -> torch.Tensor:
        weights = view.attention()                                   # (H_q, rows, T), causal
        h_kv, g = view.n_kv_heads, view.model.group_size
        readers = weights.unflatten(0, (h_kv, g)).flatten(1, 2)      # (H_kv, g * rows, T): every reader of a KV head
        peak = readers.amax(dim=1)
        floor = readers.mean(dim=1)
        return peak + floor

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rating = self._ratings(view)
        closing = view.positions >= view.query_positions.min()
        rating = torch.where(closing, torch.full_like(rating, float("inf")), rating)
        return Keep.from_topk(rating, view.budget, view.valid)
