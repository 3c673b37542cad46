"""Trend-forecast keeper (board C): rank cached tokens by the attention they are about to get, extrapolated from
how their attention moved over the rows since the last eviction.

At each eviction the rows decoded since the previous one are split into an older and a newer half. For every
token, per KV head (mean over its query heads), the mean attention from each half gives a level and a slope;
the forecast is newer + ``reach`` x (newer - older), floored at zero: a token whose reads are picking up is kept
ahead of one that was read as much but is being left behind. Because a single block is a short look, the forecast
is blended with a slowly fading memory of earlier forecasts (``memory`` per eviction, carried by position). The
newest ``n_new`` tokens and the first ``n_sink`` tokens always stay.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048), which sums attention over all past rows, TOVA (Oren et al.,
2024, arXiv 2401.06104), which uses only the current row, and A2SF (Jo et al., 2024, arXiv 2407.20485), which
fades old attention with a forgetting factor. All three look at levels; extrapolating the short-term trend of each
token's attention is, as far as we know, new. StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for the sinks.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class TrendForecast(EvictionMethod):
    name = "trend_forecast"
    query_window = 64
    reach = 0.5
    memory = 0.7
    n_new = 8
    n_sink = 4

    def forecast(self, view: LayerView, fresh: torch.Tensor) -> torch.Tensor:
        attn = view.attention()[:, fresh]  # (H_q, n, T), causal
        n = attn.shape[1]
        if n < 2:
            return view.group(attn.mean(dim=1), "mean")
        cut = n // 2
        older = view.group(attn[:, :cut].mean(dim=1), "mean")
        newer = view.group(attn[:, cut:].mean(dim=1), "mean")
        return (newer + self.reach * (newer - older)).clamp_min(0.0)

    def select(self, view: LayerView) -> Keep:
        past = view.recall("forecast")
        score = past * self.memory
        if view.queries is not None and view.query_positions is not None:
            qpos = view.query_positions
            fresh = qpos > view.state.get("upto", -1)
            if bool(fresh.any()):
                score = torch.maximum(score, self.forecast(view, fresh))
                view.state["upto"] = int(qpos.max())
        view.remember("forecast", score)
        valid = view.valid_mask()
        ranked = score.masked_fill(~valid, float("-inf")).masked_fill(view.positions < self.n_sink, float("inf"))
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            ranked[h, max(0, c - self.n_new): c] = float("inf")
        return Keep.from_topk(ranked, view.budget, view.valid)
