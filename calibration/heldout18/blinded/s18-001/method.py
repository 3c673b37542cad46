"""Sink-corrected peak/mean attention (board B_online).

The closing rows of a context pour most of their attention into the opening tokens and into themselves, so the mass
left for the body is small and its ranking noisy. We take those two sinks out, renormalise each row over the body
alone, and score a body token by a blend of its peak and its mean renormalised attention over the rows: the peak keeps
a token one row really needs, the mean keeps tokens many rows use a little.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SinkCorrected(EvictionMethod):
    name = "sink_corrected"
    query_window = 64
    n_open = 4
    peak_weight = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        probs = view.attention()  # (H_q, N, T)
        start = view.query_positions.min()
        body = (view.positions >= self.n_open) & (view.positions < start) & view.valid_mask()
        body_q = body.repeat_interleave(g, dim=0)[:, None, :]
        probs = probs * body_q
        probs = probs / probs.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        peak = view.group(probs.amax(dim=1), "max")
        mean = view.group(probs.mean(dim=1), "mean")
        peak = peak / peak.amax(dim=-1, keepdim=True).clamp_min(1e-12)
        mean = mean / mean.amax(dim=-1, keepdim=True).clamp_min(1e-12)
        score = self.peak_weight * peak + (1 - self.peak_weight) * mean
        score = score.masked_fill(~body & view.valid_mask(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
