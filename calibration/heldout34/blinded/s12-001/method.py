"""Steady Regard: keep the context tokens that every part of the context's tail keeps looking at.

Builds on SnapKV's observation window (attention of the last context queries, pooled, top-k; arXiv 2404.14469,
here query-agnostic as in KVzip's evaluation, arXiv 2505.23416) and StreamingLLM's sinks (arXiv 2309.17453).
DefensiveKV (arXiv 2510.13334) aggregates window scores pessimistically with a maximum to guard against a
token's importance spiking later. New here, the other way round: the window is cut into four sub-windows, each
sub-window's attention is normalised to one, and a token is scored by its minimum over the sub-windows (plus a
small share of the mean to break ties), so only tokens attended consistently along the tail rank high, not
those one burst of queries happened to hit.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SteadyRegard(EvictionMethod):
    name = "steady_regard"
    query_window = 64
    parts = 4
    mean_share = 0.1
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                              # (H_q, W, T)
        per = torch.stack([c.sum(dim=1) for c in attn.chunk(self.parts, dim=1)], dim=1)   # (H_q, P, T)
        per = per / per.sum(dim=-1, keepdim=True).clamp_min(1e-9)
        score = per.amin(dim=1) + self.mean_share * per.mean(dim=1)
        score = view.group(score, "mean")
        score = F.max_pool1d(score[:, None], 5, stride=1, padding=2)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
