"""Reconstruction attention, locally smoothed (board B_offline)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RepeatDedup(EvictionMethod):
    name = "repeat_dedup"
    reconstruction_queries = True
    n_sink = 4
    kernel = 3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries, reduce="max")          # (H_q, T)
        scores = view.group(attn, "mean")                          # (H_kv, T)
        scores = F.avg_pool1d(scores[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                              count_include_pad=False)[:, 0]
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
