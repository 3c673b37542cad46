"""Sharpness-weighted question attention (board A).

Question attention averaged over query heads lets diffuse heads (which spread their mass evenly and say little)
dilute the sharp heads that actually locate the answer. We weight each query head by its sharpness before averaging:
w_h = exp(-H_h) / sum exp(-H), with H_h the entropy of the head's mean question attention over the context. The
weighted score is max-pooled over 5 tokens; the question span and the first 4 tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for question/window attention and pooling, and StreamingLLM
(Xiao et al., 2023, arXiv 2309.17453) for the sinks. The sharpness weighting is our addition.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
POOL = 5


class SharpnessWeighted(EvictionMethod):
    name = "sharpness_weighted"
    query_window = 16
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q0 = int(view.query_positions.min())
        ctx = view.positions[0] < q0
        att = view.attention(reduce="mean")                                # (H_q, T)
        p = att[:, ctx]
        p = p / p.sum(-1, keepdim=True).clamp_min(1e-12)
        entropy = -(p * p.clamp_min(1e-12).log()).sum(-1)                  # (H_q,)
        g = view.model.group_size
        w = torch.softmax(-entropy.view(-1, g), dim=-1).reshape(-1, 1)     # per KV group
        score = view.group(att * w, "sum")
        score = F.max_pool1d(score[:, None], POOL, stride=1, padding=POOL // 2)[:, 0]
        keep_always = (view.positions >= q0) | (view.positions < SINKS)
        return Keep.from_topk(score.masked_fill(keep_always, float("inf")), view.budget)
