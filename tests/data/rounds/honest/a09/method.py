"""Query-drift lookahead (board C, decode-time).

Within the newest 32 queries, the mean of the newest 8 minus the mean of the 24 before them is the direction in
which the trace's queries are moving. Besides the attention of the newest 8 queries, each token gets the attention
of one extra "drift" query: the newest mean pushed one step further along that direction. Tokens the trace is
heading towards are scored before it gets there.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class QueryDrift(EvictionMethod):
    name = "query_drift"
    query_window = 32
    newest_q = 8
    drift_weight = 0.5
    sinks = 4
    recent = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries.float()  # (H_q, N, D)
        n = q.shape[1]
        cut = max(0, n - self.newest_q)
        qpos = view.query_positions[cut:]
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        now = reference_attention(q[:, cut:], view.keys, view.positions, qpos, view.model.group_size, view.valid,
                                  scale=view.model.scale, window=window, reduce="mean")  # causal
        score = view.group(now, "mean")
        if cut > 0:
            centre_new = q[:, cut:].mean(dim=1)
            centre_old = q[:, :cut].mean(dim=1)
            ahead = centre_new + (centre_new - centre_old)
            ahead = ahead * (centre_new.norm(dim=-1, keepdim=True) / ahead.norm(dim=-1, keepdim=True).clamp_min(1e-6))
            drift = view.attention(ahead[:, None, :], reduce="mean")  # (H_q, T): sees the whole cache
            score = score + self.drift_weight * view.group(drift, "mean")
        valid = view.valid_mask()
        pos = view.positions.masked_fill(~valid, -1)
        newest = pos.amax(dim=1, keepdim=True)
        protect = valid & ((view.positions < self.sinks) | (pos > newest - self.recent))
        return Keep.from_topk(score.masked_fill(protect, float("inf")), view.budget, view.valid)
