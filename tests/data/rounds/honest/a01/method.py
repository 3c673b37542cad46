"""Question-attention / key-norm rank fusion (board A).

SnapKV-style scores from the question span and the last 16 prompt queries are combined with K-norm's
low-key-norm preference by reciprocal rank fusion rather than by adding raw magnitudes, so neither signal's
scale dominates. The first 2 tokens (sinks) are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _ranks(score: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """0 = best, per row; invalid entries get the worst rank."""
    order = score.masked_fill(~valid, float("-inf")).argsort(dim=-1, descending=True)
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(order.shape[1], device=order.device).expand_as(order))
    return ranks.float()


class QuestionNormFusion(EvictionMethod):
    name = "question_norm_fusion"
    query_window = 16
    question_queries = True
    rrf_k = 20.0
    norm_weight = 0.5
    kernel = 5
    sinks = 2

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        attn = F.max_pool1d(attn[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        low_norm = -view.keys.float().norm(dim=-1)
        fused = 1.0 / (self.rrf_k + _ranks(attn, valid)) + self.norm_weight / (self.rrf_k + _ranks(low_norm, valid))
        fused = fused.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(fused, view.budget, view.valid)
