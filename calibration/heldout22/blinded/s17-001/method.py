"""Percentile consensus (board A, question-aware prefill).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): tokens are scored by the attention of the question and the
prompt's last rows, pooled. SnapKV averages the raw attention of a KV head's query heads, so one sharply peaked
query head can dominate the mean while a token that every head ranks fairly high is lost. Here each query head's
scores are first turned into within-head percentiles, and a token's score for its KV head is the mean percentile
plus the best percentile over the group: agreement and confident single-head picks both count, and no head's
scale dominates. Pooling (max, kernel 7) is applied afterwards, the window and the first four tokens are kept.
Related but different: Ada-KV (arXiv 2407.11550) and DefensiveKV (arXiv 2510.13334) change how budget or
window queries are aggregated; this changes only the aggregation over a group's query heads.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class PercentileConsensus(EvictionMethod):
    name = "percentile_consensus"
    query_window = 32
    question_queries = True
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        raw = view.attention(reduce="sum")                                    # (H_q, T)
        ok = view.valid_mask().repeat_interleave(view.model.group_size, dim=0)
        raw = raw.masked_fill(~ok, -1.0)
        ranks = raw.argsort(dim=1).argsort(dim=1).float()
        pct = ranks / ok.sum(1, keepdim=True).clamp_min(1)
        score = view.group(pct, "mean") + view.group(pct, "max")
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, :4] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
