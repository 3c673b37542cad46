"""Decayed-peak retention (board C).

A sum of attention rewards tokens for being old; a single-query score (TOVA) forgets a token the moment one query
looks elsewhere. In between: each token remembers the largest attention any recent query paid it, and that memory
fades geometrically with every eviction round in which no query renews it.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DecayedPeak(EvictionMethod):
    name = "decayed_peak"
    query_window = 256
    fade = 0.8
    keep_open = 4
    keep_recent = 32

    def select(self, view: LayerView) -> Keep:
        memory = view.recall("peak", fill=0.0) * self.fade
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                rows = view.queries if bool(fresh.all()) else view.queries[:, fresh]
                peak = view.attention(rows, reduce="max") if not bool(fresh.all()) else view.attention(reduce="max")
                memory = torch.maximum(memory, view.group(peak, "max"))
                view.state["seen"] = int(view.query_positions.max())
        view.remember("peak", memory)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        pinned = (view.positions < self.keep_open) | (view.positions > newest - self.keep_recent)
        return Keep.from_topk(memory.masked_fill(pinned, float("inf")), view.budget, view.valid)
