"""Scaled Tally: a decode-time attention tally read at a temperature that tracks the cache's length.

As a cache grows, softmax spreads thinner and a plain attention tally drifts towards whatever has been around
longest. Here the decode queries since the previous call are scored with their logits sharpened by the log of
the number of tokens present relative to a reference length, so that each round's attention keeps the same
spread whatever the cache holds; the rounds are summed per token (carried by position) and the total is
weighted by the magnitude of the token's value. First tokens and a short recent window are kept.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class ScaledTally(EvictionMethod):
    name = "scaled_tally"
    query_window = 64
    reference = 64
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        t = int(view.valid_mask().sum(dim=1).max())
        sharpen = max(1.0, math.log(max(t, 2)) / math.log(self.reference))
        seen = view.state.get("st_seen", -1)
        fresh = view.query_positions > seen
        tally = view.recall("st_tally")
        if bool(fresh.any()):
            a = reference_attention(view.queries[:, fresh], view.keys, view.positions,
                                    view.query_positions[fresh], view.model.group_size, view.valid,
                                    scale=view.model.scale * sharpen, reduce="sum")
            tally = tally + view.group(a, "sum")
            view.state["st_seen"] = int(view.query_positions.max())
        view.remember("st_tally", tally)
        scores = tally * view.values.float().norm(dim=-1)
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.recent):n] = float("inf")
            scores[h, :min(self.sinks, n)] = float("inf")
        return Keep.from_topk(scores, b, view.valid)
