"""Rising Interest: at decode, keep the tokens whose attention is climbing, not only the ones already high.

Each call on a layer scores tokens by the attention of the decode queries since its previous call
(summed, averaged over a KV head's query heads). The score of the previous call is carried by position;
a token whose current attention exceeds what it got last time earns a bonus of `momentum` times the rise,
so that a token the reasoning is turning back to survives the eviction before it peaks. New tokens have
no history and take their current attention as the rise. Sinks and a short recent window are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RisingInterest(EvictionMethod):
    name = "rising_interest"
    query_window = 48
    momentum = 0.75
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        now = view.group(view.attention(reduce="mean"), "mean")
        before = view.recall("interest", fill=0.0)
        rise = (now - before).clamp_min(0.0)
        view.remember("interest", now)
        score = now + self.momentum * rise
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        newest = view.positions.masked_fill(~valid, -1).max(dim=1, keepdim=True).values
        keep_always = (view.positions < self.sinks) | (view.positions > newest - self.recent)
        score = score.masked_fill(keep_always & valid, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
