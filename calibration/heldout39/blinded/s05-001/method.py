"""Peak-Relative Ballots: question attention where every question token casts ballots relative to its own peak.

SnapKV-style scoring sums the question's attention rows, so a sharp query (one dominant key) and a diffuse
query (mass spread thin) weigh very differently, and the diffuse ones barely count. Here each query's row is
divided by its own largest weight outside the first 4 tokens (the sinks, which every row would otherwise peak on),
so every question token gives 1 to its favourite context token and proportionally less to the others. Ballots
are summed over the question, maxed over a KV head's query heads and smoothed with a width-3 max-pool; the 4
sink tokens are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class PeakRelativeBallots(EvictionMethod):
    name = "peak_relative_ballots"
    question_queries = True
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                        # (H_q, N, T)
        g = view.model.group_size
        sink_cols = (view.positions < self.sinks).repeat_interleave(g, dim=0)[:, None, :]
        peak = attn.masked_fill(sink_cols, 0.0).amax(dim=-1, keepdim=True)
        ballots = (attn / peak.clamp_min(1e-9)).clamp(max=1.0).sum(dim=1)   # (H_q, T)
        score = view.group(ballots, "max")
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
