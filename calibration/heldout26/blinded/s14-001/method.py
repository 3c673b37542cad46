"""Drift-gated forgetting (board C, decode-time).

H2O keeps the tokens with the largest attention received, summed over all queries so far; A2SF showed the sum
should forget (an exponential forgetting factor), or old tokens win merely for having been seen longer. A
fixed factor forgets at the same rate whether the trace is still on the same sub-problem or has moved on.
Drift-gated forgetting sets the factor from the queries themselves: at each eviction it compares the mean
direction of the queries since the previous eviction with the mean direction of the queries before that (per
query head, cosine), and decays the carried sums by exp(-4 x drift), drift = 1 - mean cosine. While the trace
stays on topic nothing is forgotten; when it turns, old attention fades. The newest 16 tokens and the first 2
are always kept.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DriftGatedForgetting(EvictionMethod):
    name = "drift_gated_forgetting"
    query_window = 64
    sharpness = 4.0
    newest = 16
    first = 2

    def select(self, view: LayerView) -> Keep:
        carried = view.recall("sum")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            new = view.query_positions > seen
            if bool(new.any()):
                q_new = view.queries[:, new]
                direction = F.normalize(q_new.float().mean(dim=1), dim=-1)       # (H_q, D)
                before = view.state.get("direction")
                if before is not None:
                    drift = 1.0 - float((direction * before.to(direction.device)).sum(dim=-1).mean())
                    carried = carried * math.exp(-self.sharpness * max(0.0, drift))
                view.state["direction"] = direction
                got = view.attention(q_new, reduce="sum") if not bool(new.all()) else view.attention(reduce="sum")
                carried = carried + view.group(got, "sum")
                view.state["seen"] = int(view.query_positions.max())
        view.remember("sum", carried)
        score = carried.clone()
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - min(self.newest, view.budget // 2)): c] = float("inf")
            score[h, : min(self.first, c)] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
