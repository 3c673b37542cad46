"""Rank-fused question attention and key norm (board A, question-aware prefill).

Combines two published signals by reciprocal rank fusion instead of multiplying or adding their raw values, whose
scales differ from layer to layer:
- SnapKV's (Li et al., 2024, arXiv 2404.14469) question/window attention: summed over the question span and the last
  16 prompt rows, mean over the group's query heads, max-pooled (kernel 5);
- the key-norm signal of Devoto et al. (2024, arXiv 2406.11430): keys with a small L2 norm tend to receive high
  attention, so a low norm ranks high.
A token's fused score is 1 / (60 + attention rank) + 0.5 / (60 + norm rank) (Cormack et al.'s RRF constant, 60). The
first 4 tokens and the question span are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Per-row rank of each entry, 0 = largest."""
    order = x.argsort(dim=-1, descending=True)
    r = torch.empty_like(order)
    r.scatter_(-1, order, torch.arange(x.shape[-1], device=x.device).expand_as(order))
    return r.float()


class RankFusedAttentionNorm(EvictionMethod):
    name = "rank_fused_attn_norm"
    query_window = 16
    question_queries = True
    rrf_k = 60.0
    norm_weight = 0.5
    kernel = 5
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.max_pool1d(att[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        norm = view.keys.float().norm(dim=-1)
        mask = view.valid_mask()
        att = att.masked_fill(~mask, float("-inf"))
        low_norm = (-norm).masked_fill(~mask, float("-inf"))
        fused = 1.0 / (self.rrf_k + _ranks(att)) + self.norm_weight / (self.rrf_k + _ranks(low_norm))
        fused = fused.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        fused[:, : self.sinks] = float("inf")
        return Keep.from_topk(fused, view.budget, view.valid)
