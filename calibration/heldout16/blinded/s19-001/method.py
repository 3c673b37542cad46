"""Distance-baselined question attention (board A, question-aware prefill).

Question attention mixes two things: what the question is looking for, and how close a token sits to the question
(RoPE and the model's recency habits give nearby tokens attention whatever they say). We estimate the second part
from the attention itself and discount it. Distances from the question's first row are bucketed on a log2 scale; the
baseline of a bucket is the mean attention its tokens receive. A token's score is its attention times the square
root of its ratio to its bucket's baseline, so a token that stands out among its equidistant neighbours is favoured
over one that is merely close. Attention is that of the question span and the closing 8 rows (causal), summed over
the rows and averaged over the KV head's query heads; the question span and the 4 opening tokens are kept.

Builds on SnapKV's question-window attention (Li et al., 2024) and StreamingLLM's sinks (Xiao et al., 2023); the
distance baseline is the new, small part.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DistanceBaselined(EvictionMethod):
    name = "distance_baselined"
    question_queries = True
    query_window = 8
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        valid = view.valid_mask()
        first = view.query_positions.min()
        dist = (first - view.positions).clamp_min(1).float()
        bucket = dist.log2().floor().long()  # (H_kv, T)
        n_b = int(bucket.max()) + 1
        score = torch.zeros_like(att)
        for h in range(view.n_kv_heads):
            m = valid[h] & (view.positions[h] < first)
            b = bucket[h][m]
            tot = torch.zeros(n_b, device=att.device).index_add_(0, b, att[h][m])
            cnt = torch.zeros(n_b, device=att.device).index_add_(0, b, torch.ones_like(att[h][m]))
            base = (tot / cnt.clamp_min(1)).clamp_min(1e-12)
            ratio = att[h] / base[bucket[h]]
            score[h] = att[h] * ratio.clamp_min(0).sqrt()
        fixed = (view.positions < self.opening) | (view.positions >= first)
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
