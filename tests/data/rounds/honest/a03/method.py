"""Percentile-normalised question attention with box smoothing (board A).

Each query head's attention over the context is turned into within-head percentiles before the heads of a
KV group are averaged, so one sharply peaked head cannot swamp the others; the result is smoothed with a
5-token box filter (cumulative-sum differences) and ties are broken by value norm. The first 4 tokens
(attention sinks) are always kept: percentiles alone cap them at the same score as any other top token.
"""

import torch
from torch import Tensor

from harness import EvictionMethod, Keep, LayerView

WIDTH = 5
SINKS = 4
VALUE_TIE = 1e-3


def percentiles(x: Tensor, mask: Tensor) -> Tensor:
    """Per row, the rank of each entry among the row's valid entries, scaled to [0, 1]."""
    order = x.masked_fill(~mask, float("-inf")).argsort(dim=-1)
    rank = torch.zeros_like(x)
    rank.scatter_(-1, order, torch.arange(x.shape[-1], dtype=x.dtype, device=x.device).expand_as(x).contiguous())
    n_invalid = (~mask).sum(dim=-1, keepdim=True)
    n_valid = mask.sum(dim=-1, keepdim=True).clamp_min(2)
    return ((rank - n_invalid) / (n_valid - 1)).clamp(0, 1).masked_fill(~mask, 0.0)


def box_smooth(x: Tensor, width: int) -> Tensor:
    """Centred moving average along the last axis, by differences of a cumulative sum."""
    half = width // 2
    padded = torch.nn.functional.pad(x, (half + 1, half))
    c = padded.cumsum(dim=-1)
    return (c[..., width:] - c[..., :-width]) / width


class PercentileBoxAttention(EvictionMethod):
    name = "percentile_box_attention"
    query_window = 16
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        per_qhead = view.attention(reduce="mean")  # (H_q, T)
        mask_q = valid.repeat_interleave(view.model.group_size, dim=0)
        score = view.group(percentiles(per_qhead, mask_q), "mean")
        score = box_smooth(score, WIDTH)
        vnorm = view.values.float().norm(dim=-1)
        vnorm = vnorm / vnorm.amax(dim=-1, keepdim=True).clamp_min(1e-6)
        score = (score + VALUE_TIE * vnorm).masked_fill(view.positions < SINKS, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
