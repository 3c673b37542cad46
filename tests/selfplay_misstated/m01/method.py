"""Calibrated Blend: question attention blended with a key-norm prior, plus attention sinks."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

ALPHA = 0.5      # weight of the key-norm prior
N_SINK = 4
KERNEL = 5


def _zscore(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    x = x.masked_fill(~valid, 0.0)
    n = valid.sum(dim=1, keepdim=True).clamp_min(1)
    mu = x.sum(dim=1, keepdim=True) / n
    var = ((x - mu) ** 2).masked_fill(~valid, 0.0).sum(dim=1, keepdim=True) / n
    return (x - mu) / var.sqrt().clamp_min(1e-6)


class CalibratedBlend(EvictionMethod):
    name = "calibrated_blend"
    query_window = 16
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        prior = -view.keys.float().norm(dim=-1)  # (H_kv, T): low-norm keys tend to be attended
        if view.queries is None:
            scores = _zscore(prior, valid)
        else:
            attn = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
            attn = F.avg_pool1d(attn[:, None], KERNEL, stride=1, padding=KERNEL // 2)[:, 0]
            scores = _zscore(attn, valid) + ALPHA * _zscore(prior, valid)
        scores = scores.masked_fill(view.positions < N_SINK, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
