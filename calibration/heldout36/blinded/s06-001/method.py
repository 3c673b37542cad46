"""Drift Window: widen the protected recent window when the reasoning changes subject.

At each cap, the newest queries are compared with the queries seen at the previous cap (cosine of their
mean direction, per query head). Little drift means the model is still on the same step and accumulated
attention is a good guide; a large drift means a new step has begun, whose context is the recent tokens,
so the protected recent window grows with the drift (from 8 to half the budget). Outside it, tokens are
ranked by attention of the newest queries summed into a tally carried across caps.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DriftWindow(EvictionMethod):
    name = "drift_window"
    query_window = 48
    sinks = 4
    min_recent = 8

    def select(self, view: LayerView) -> Keep:
        tally = view.recall("tally")
        drift = 0.0
        if view.queries is not None:
            direction = F.normalize(view.queries.float().mean(dim=1), dim=-1)  # (H_q, D)
            prev = view.state.get("direction")
            if prev is not None:
                drift = float((1 - (direction * prev).sum(dim=-1)).clamp(0, 2).mean() / 2)
            view.state["direction"] = direction
            tally = tally + view.group(view.attention(reduce="mean"), "sum")
        view.remember("tally", tally)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        recent = int(self.min_recent + min(1.0, 4 * drift) * max(0, view.budget // 2 - self.min_recent))
        valid = view.valid_mask()
        newest = view.positions.masked_fill(~valid, -1).max(dim=1, keepdim=True).values
        hold = (view.positions < self.sinks) | (view.positions > newest - recent)
        return Keep.from_topk(tally.masked_fill(hold & valid, float("inf")), view.budget, view.valid)
