"""Total reconstruction attention per token (board B_offline)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RefinedEcho(EvictionMethod):
    name = "refined_echo"
    reconstruction_queries = True
    candidate_factor = 2
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries, reduce="sum")            # (H_q, T)
        scores = view.group(attn, "sum")                             # (H_kv, T)
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
