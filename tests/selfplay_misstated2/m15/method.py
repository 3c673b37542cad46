"""Mean reconstruction attention, per KV head (board B_offline)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SharedEcho(EvictionMethod):
    name = "shared_echo"
    reconstruction_queries = True
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries, reduce="mean")        # (H_q, T): mean over the repeat pass
        scores = view.group(attn, "max")                           # (H_kv, T)
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
