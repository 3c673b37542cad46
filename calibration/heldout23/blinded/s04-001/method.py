"""Sharp-row weighting (board A, question-aware prefill).

SnapKV (Li et al., 2024, arXiv 2404.14469) sums the attention of its observation rows with equal weight. Many of
those rows are function words whose attention is spread thinly over the whole context; a few rows (the content
words of the question) attend sharply to the facts they need. Here each question row is weighted by its own
sharpness, 1 / (1 + normalised entropy of its attention) squared, before the rows are summed, so diffuse rows
barely move the ranking. The rest is SnapKV's recipe: group mean over the KV head's query heads, max-pooling
over 5 neighbours, question rows and the first 4 tokens kept.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SharpRowWeighting(EvictionMethod):
    name = "sharp_row_weighting"
    query_window = 8
    question_queries = True
    kernel = 5
    n_sink = 4
    power = 2.0

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()                                           # (H_q, R, T), causal
        qpos = view.query_positions.to(view.positions.device)
        ok = view.valid_mask()
        visible = ((view.positions[:, None, :] <= qpos[None, :, None]) & ok[:, None, :]).sum(-1)   # (H_kv, R)
        visible = visible.repeat_interleave(view.model.group_size, 0).clamp_min(2).float()
        ent = -(probs * probs.clamp_min(1e-12).log()).sum(-1) / visible.log()                     # (H_q, R) in [0, 1]
        weight = (1.0 / (1.0 + ent)) ** self.power
        weight = weight / weight.sum(-1, keepdim=True).clamp_min(1e-12)
        scores = torch.einsum("hr,hrt->ht", weight, probs)
        scores = view.group(scores, "mean")
        scores = F.max_pool1d(scores[:, None], self.kernel, 1, self.kernel // 2)[:, 0]
        keep = (view.positions >= int(qpos.min())) | (view.positions < self.n_sink)
        return Keep.from_topk(scores.masked_fill(keep, float("inf")), view.budget, view.valid)
