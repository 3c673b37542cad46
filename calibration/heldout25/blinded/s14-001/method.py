"""Defensive aggregation for query-agnostic prefill (board B_online) -- a port.

Ported from DefensiveKV: Yuan Feng et al., "Taming the Fragility of KV Cache Eviction in LLM Inference"
(arXiv:2510.13334, ICLR 2026). The idea, and the credit for it, are theirs: the usual mean over the observation
window's rows assumes the window's importance pattern is stable, and evicts an entry that one row needs badly if
the others ignore it; their defensive aggregation takes the worst case (the largest share any row gives the entry)
and corrects it with a small prior so entries seen by no row are not all tied at zero.

Our port, and how it departs: the window is the last 48 context rows (board B_online hands over no question);
the prior is a fixed 0.1 x the mean attention (our reading of the paper's correction, not its exact form); the
layer-level budget variant (Layer-DefensiveKV) is not ported, every layer keeps the arena's budget.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class DefensiveAggregationPort(EvictionMethod):
    name = "defensive_aggregation_port"
    query_window = 48
    prior = 0.1
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        worst = view.group(view.attention(reduce="max"), "max")
        mean = view.group(view.attention(reduce="mean"), "mean")
        score = worst + self.prior * mean
        first = view.positions.min(dim=-1, keepdim=True).values
        last_ctx = int(view.query_positions.min())
        score = score.masked_fill((view.positions < first + self.sinks) | (view.positions >= last_ctx),
                                  float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
