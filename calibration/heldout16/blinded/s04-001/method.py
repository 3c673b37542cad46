"""Two-scale pooled question attention (board A, question-aware prefill).

SnapKV (Li et al., 2024) smooths its window attention with one pooling kernel, and the kernel size is a trade-off:
a narrow kernel keeps an isolated needle's neighbours but misses a spread-out answer, a wide one keeps whole
passages but blurs single hits. We keep both views. The question's attention (the question span and the closing 8
rows, causal, summed over the rows and averaged over the KV head's query heads) is max-pooled with a kernel of 3 and
average-pooled with a kernel of 15; each is divided by its own per-head maximum, and a token's score is the larger of
the two. The question span and the 4 opening tokens (StreamingLLM's sinks, Xiao et al., 2023) are always kept.

A modest change: what is new is only taking the larger of two normalised pooling scales.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TwoScalePooled(EvictionMethod):
    name = "two_scale_pooled"
    question_queries = True
    query_window = 8
    narrow = 3
    wide = 15
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        base = view.group(view.attention(reduce="sum"), "mean")[:, None]  # (H_kv, 1, T)
        sharp = F.max_pool1d(base, self.narrow, stride=1, padding=self.narrow // 2)[:, 0]
        broad = F.avg_pool1d(base, self.wide, stride=1, padding=self.wide // 2, count_include_pad=False)[:, 0]
        score = torch.maximum(sharp / sharp.amax(dim=-1, keepdim=True).clamp_min(1e-12),
                              broad / broad.amax(dim=-1, keepdim=True).clamp_min(1e-12))
        fixed = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
