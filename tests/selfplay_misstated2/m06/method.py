"""Question attention with a magnitude correction (board A)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class QuestionMagnitude(EvictionMethod):
    name = "question_magnitude"
    question_queries = True
    query_window = 8
    n_sink = 2

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.attention(reduce="sum")                       # (H_q, T)
        attn = view.group(attn, "sum")                            # (H_kv, T)
        mag = view.keys.float().norm(dim=-1)                      # (H_kv, T)
        ref = (mag * valid).sum(dim=1, keepdim=True) / valid.sum(dim=1, keepdim=True).clamp_min(1)
        scores = attn * (ref / mag.clamp_min(1e-6))
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
