"""Question attention blended with recency (board A)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class BlendRecency(EvictionMethod):
    name = "blend_recency"
    question_queries = True
    alpha = 0.35
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="mean"), "mean")          # (H_kv, T)
        attn = attn.masked_fill(~valid, 0.0)
        attn = attn / attn.amax(dim=1, keepdim=True).clamp_min(1e-12)     # in [0, 1] per head
        pos = view.positions.float()
        lo = pos.masked_fill(~valid, float("inf")).amin(dim=1, keepdim=True)
        hi = pos.masked_fill(~valid, float("-inf")).amax(dim=1, keepdim=True)
        recency = (pos - lo) / (hi - lo).clamp_min(1.0)                    # in [0, 1] per head
        scores = (1 - self.alpha) * attn + self.alpha * recency
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
