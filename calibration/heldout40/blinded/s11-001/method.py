"""Turning Points: query-agnostic compression that favours tokens where the keys change direction.

In a context, the tokens that open a new item (a new sentence, a new key-value pair, a new name) tend to have keys
unlike the few tokens before them, and they are what a later question has to find. Each token gets a jump score,
one minus the cosine between its key and the mean key of the three tokens before it; and a read score, the
attention the context's last 32 positions pay it (SnapKV's window, averaged over a KV head's query heads). The
two are combined as the mean of their percentile ranks. The first four tokens and the last 16 are always kept.
Builds on SnapKV (window attention) and StreamingLLM (sinks, recent window).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _ranks(x: torch.Tensor) -> torch.Tensor:
    return x.argsort(dim=1).argsort(dim=1).float() / max(1, x.shape[1] - 1)


class TurningPoints(EvictionMethod):
    name = "turning_points"
    query_window = 32
    lookback = 3
    sinks = 4
    recent = 16

    def _jumps(self, view: LayerView) -> torch.Tensor:
        k = view.keys.float()
        csum = F.pad(k.cumsum(dim=1), (0, 0, 1, 0))                         # (H, T+1, D)
        t = torch.arange(k.shape[1], device=k.device)
        lo = (t - self.lookback).clamp_min(0)
        before = (csum[:, t] - csum[:, lo]) / (t - lo).clamp_min(1)[None, :, None].float()
        cos = F.cosine_similarity(k, before, dim=-1)
        cos[:, 0] = -1.0                                                    # nothing before the first token
        return 1 - cos

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        jump = self._jumps(view).masked_fill(~valid, float("-inf"))
        if view.queries is not None:
            read = view.group(view.attention(reduce="sum"), "mean").masked_fill(~valid, float("-inf"))
            scores = 0.5 * (_ranks(jump) + _ranks(read))
        else:
            scores = _ranks(jump)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, : min(self.sinks, n)] = float("inf")
            scores[h, max(0, n - self.recent): n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
