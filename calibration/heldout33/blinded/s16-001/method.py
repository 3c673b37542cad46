"""Rising Interest: at each cap, prefer tokens whose attention peak is growing between eviction rounds."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RisingInterest(EvictionMethod):
    name = "rising_interest"
    query_window = 512
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        before = view.recall("peak")
        now = before
        if view.queries is not None:
            since = view.state.get("since", -1)
            rows = view.query_positions > since
            if bool(rows.any()):
                now = view.group(view.attention()[:, rows].amax(dim=1), "max")
                view.state["since"] = int(view.query_positions.max())
        view.remember("peak", now)
        score = now + (now - before).clamp_min(0)
        p = view.positions.masked_fill(~ok, -1)
        keep = (p >= 0) & ((p < self.sinks) | (p > p.max(1, keepdim=True).values - self.recent))
        return Keep.from_topk(score.masked_fill(keep, float("inf")), view.budget, view.valid)
