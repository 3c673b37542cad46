"""LagKV (Liang et al., 2025, arXiv 2504.04704): attention-free. After ``n_sink`` sinks the sequence is cut into
partitions of ``lag_size``; each partition's keys and values are min-max normalised channel-wise by the min and max
of the *next* partition (the lag reference), the standard deviation over channels, softmaxed within the partition,
scores a token (keys and values averaged); within each partition tokens are ranked, so every partition gives up the
same share. The sinks and the last partition (plus the remainder) are always kept; a sequence shorter than
n_sink + 2 lag keeps its latest tokens. Defaults (n_sink 4, lag 128) are the official kvpress LagKVPress's.
Settings: pa_lagkv; pa_lagkv?lag_size=64; pa_lagkv?lag_size=256; pa_lagkv?n_sink=16
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class LagKV(EvictionMethod):
    name = "pa_lagkv"
    paper: ClassVar[str] = "LagKV"
    n_sink = 4
    lag_size = 128

    def _states(self, x: torch.Tensor) -> torch.Tensor:  # (H, P, L, D) -> (H, P - 1, L)
        ref, cur = x[:, 1:], x[:, :-1]
        lo, hi = ref.amin(dim=-2, keepdim=True), ref.amax(dim=-2, keepdim=True)
        return ((cur - lo) / (hi - lo)).std(dim=-1).softmax(dim=-1)

    def select(self, view: LayerView) -> Keep:
        t, s, lag = view.n_tokens, self.n_sink, self.lag_size
        if view.budget >= t or view.valid is not None or t < s + 2 * lag:  # too short: sinks, then the latest
            return Keep.from_topk(view.positions.float().masked_fill(view.positions < s, float("inf")),
                                  view.budget, view.valid)
        h, d = view.n_kv_heads, view.keys.shape[-1]
        end = s + ((t - s) // lag) * lag
        k = view.keys[:, s:end].float().reshape(h, -1, lag, d)
        v = view.values[:, s:end].float().reshape(h, -1, lag, d)
        score = (self._states(k) + self._states(v)) / 2
        score = score.argsort(dim=-1).argsort(dim=-1).float() / lag  # rank within the partition
        ones = torch.ones(h, s, device=score.device)
        tail = torch.ones(h, t - (end - lag), device=score.device)
        return Keep.from_topk(torch.cat([ones, score.reshape(h, -1), tail], dim=-1), view.budget)
