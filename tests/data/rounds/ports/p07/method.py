"""Payload-weighted recall (board B_offline): an entry matters when the model, re-reading the context, looks at
it, and when what it would hand back (its value) is substantial."""

import torch

from harness import EvictionMethod, Keep, LayerView


class PayloadRecall(EvictionMethod):
    name = "payload_recall"
    reconstruction_queries = True
    query_window = 16          # used where no re-read pass is offered
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        looked = view.group(view.attention(reduce="sum"), "sum")          # (H_kv, T)
        payload = view.values.float().abs().sum(dim=-1)                   # L1 size of each value
        score = looked * payload
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
