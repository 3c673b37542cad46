"""Peak question attention with sinks and a short recent window (board A)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class PeakQuestion(EvictionMethod):
    name = "peak_question"
    question_queries = True
    n_sink = 4
    n_recent = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="max")                  # (H_q, T): peak over the question's queries
        scores = view.group(attn, "max")                     # (H_kv, T): peak over the group's query heads
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        recent = min(self.n_recent, view.budget // 4)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent): n] = float("inf")
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
