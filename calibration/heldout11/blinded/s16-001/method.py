"""Sharpness-weighted head pooling (board A).

SnapKV averages the question's attention over the query heads that share a KV head. Some of those heads read the
prompt diffusely (positional or syntactic heads) and add a flat floor that drowns the sharp heads' picks. We weight
each query head by how sharp its reading of the prompt is before pooling:

    sharpness_h = 1 - H(p_h) / log(T),  p_h = head h's attention, summed over the rows and renormalised
    score       = sum_h sharpness_h * attention_h / sum_h sharpness_h   (over each KV head's query heads)

then max-pool (5) as SnapKV does. The rows are the question and the last 16 prompt rows; they are always kept,
with the four opening tokens. Builds on SnapKV (Li et al., 2024, arXiv 2404.14469); head weighting is computed per
prompt here, where HeadKV (arXiv 2410.19258) uses importance profiled offline to split budgets between heads.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SharpnessPooling(EvictionMethod):
    name = "sharpness_pooling"
    query_window = 16
    question_queries = True
    opening = 4

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.attention(reduce="sum")  # (H_q, T)
        p = a / a.sum(-1, keepdim=True).clamp_min(1e-12)
        entropy = -(p * p.clamp_min(1e-12).log()).sum(-1)
        sharp = (1 - entropy / math.log(max(t, 2))).clamp_min(1e-3)  # (H_q,)
        g = view.model.group_size
        w = sharp.view(-1, g, 1)
        score = (a.view(-1, g, t) * w).sum(1) / w.sum(1)
        score = F.max_pool1d(score[:, None], 5, stride=1, padding=2)[:, 0]
        fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.opening)
        score = torch.where(fixed, 1e9 + view.positions.float(), score)  # newest first if they alone fill the budget
        return Keep.from_topk(score, b, view.valid)
