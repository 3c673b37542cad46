"""Lifetime mean with a spike guard (board C).

Decode-time eviction by accumulated attention (H2O) favours old tokens: they have been seen by more queries.
Dividing by the number of queries that could see each token (the mean attention received, kvpress's
ObservedAttention normalisation) removes that bias but makes a token that has just become important look
ordinary: one strong read is diluted by its whole lifetime. We keep the lifetime mean and add a guard for
recent spikes:

    score_t = max( mean_t , 0.5 * spike_t )

mean_t = attention received since the token entered the cache / number of queries that saw it (carried across
calls by position); spike_t = the largest attention any query since the layer's previous call paid it (max over
the group's query heads). The four opening tokens and the newest 16 are always kept.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048) and its normalised form, and on TOVA-style recent reads
(Oren et al., 2024, arXiv 2401.06104). The max with a half-weighted spike is our small addition.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SpikeGuard(EvictionMethod):
    name = "spike_guard"
    query_window = 64
    spike_weight = 0.5
    opening = 4
    newest = 16

    def select(self, view: LayerView) -> Keep:
        total = view.recall("sg_total")
        seen = view.recall("sg_seen")
        spike = torch.zeros_like(total)
        if view.queries is not None and view.query_positions is not None:
            last = view.state.get("sg_upto", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                rows = view.attention()[:, fresh]  # (H_q, n, T), causal
                total = total + view.group(rows.sum(dim=1), "mean")
                spike = view.group(rows.amax(dim=1), "max")
                qp = view.query_positions[fresh]
                seen = seen + (qp[None, None, :] >= view.positions[:, :, None]).sum(dim=-1).float()
                view.state["sg_upto"] = int(view.query_positions.max())
        view.remember("sg_total", total)
        view.remember("sg_seen", seen)
        score = torch.maximum(total / seen.clamp_min(1.0), self.spike_weight * spike)
        top = view.positions.max(dim=1, keepdim=True).values
        fixed = (view.positions > top - self.newest) | (view.positions < self.opening)
        score = score.masked_fill(fixed, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
