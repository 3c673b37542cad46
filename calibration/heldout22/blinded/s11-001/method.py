"""Outlier-lifted window scores (board A, question-aware prefill).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the attention score, and on the observation behind
KeyDiff (Park et al., 2025, arXiv 2504.15364) that keys unlike the others tend to matter. KeyDiff compares each
key with the mean key of the whole cache; here the comparison is local: a key's novelty is one minus its cosine
similarity to the mean of its 16 neighbours (8 on each side), i.e. how much it breaks from its own passage. The
SnapKV score (question + last 32 rows, group mean, max-pool 7) is multiplied by (1 + 0.5 x novelty percentile), so
novelty only reorders tokens of comparable attention. The window and the first four tokens are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class OutlierLift(EvictionMethod):
    name = "outlier_lift"
    query_window = 32
    question_queries = True
    reach = 8
    lift = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ok = view.valid_mask()
        k = F.normalize(view.keys.float(), dim=-1) * ok[..., None]
        w = 2 * self.reach + 1
        summed = F.avg_pool1d(k.transpose(1, 2), w, stride=1, padding=self.reach, count_include_pad=False)
        local = (summed.transpose(1, 2) * w - k) / (w - 1)
        novelty = 1 - F.cosine_similarity(k, local, dim=-1)
        novelty = novelty.masked_fill(~ok, -1.0)
        pct = novelty.argsort(1).argsort(1).float() / ok.sum(1, keepdim=True).clamp_min(1)
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.max_pool1d(att[:, None], 7, stride=1, padding=3)[:, 0]
        score = att * (1 + self.lift * pct)
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, :4] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
