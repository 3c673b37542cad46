"""Decode-time eviction by recent-query attention, newest tokens protected."""

import torch

from harness import EvictionMethod, Keep, LayerView


class FadeKV(EvictionMethod):
    name = "fadekv"
    query_window = 32
    n_recent = 16
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="mean")             # (H_q, T): the window's queries, averaged
        scores = view.group(attn, "max")                 # (H_kv, T)
        counts = valid.sum(dim=1)
        recent = min(self.n_recent, view.budget // 2)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent): n] = float("inf")
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
