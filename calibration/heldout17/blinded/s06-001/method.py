"""Sharp-row weighting (board A, question-aware prefill).

Question-attention eviction (SnapKV, Li et al., 2024, arXiv 2404.14469) sums the attention of every question row.
Many of those rows (punctuation, function words, the chat template) spread their attention almost evenly and add
little but noise. We weight each row by how sharp it is: weight = 1 - H(row) / log(n), where H is the entropy of the
row's attention over the n entries it sees. A token's score is the weighted sum over the rows (question span and the
closing 8 rows), averaged over the KV head's query heads, then average-pooled with width 3 so neighbours of a hit
come along. The question span and the 4 opening tokens are always kept (StreamingLLM's sinks, Xiao et al., 2023).
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SharpRowWeighting(EvictionMethod):
    name = "sharp_row_weighting"
    question_queries = True
    query_window = 8
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention().float()  # (H_q, N, T)
        seen = (attn > 0).sum(dim=-1).clamp_min(2).float()  # entries each row actually sees
        entropy = -(attn * attn.clamp_min(1e-12).log()).sum(dim=-1)
        sharp = (1.0 - entropy / seen.log()).clamp(0.0, 1.0)  # (H_q, N)
        score = view.group((attn * sharp[..., None]).sum(dim=1), "mean")
        score = F.avg_pool1d(score[:, None], 3, stride=1, padding=1, count_include_pad=False)[:, 0]
        fixed = (view.positions < self.sinks) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(score.masked_fill(fixed, math.inf), view.budget, view.valid)
