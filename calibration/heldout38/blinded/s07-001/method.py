"""Payload Attention: attention says where the model looks, the value says what it brings back. A token that is
looked at a lot but carries an almost empty value (the classic case is the first token, a resting place for
spare attention) contributes little to the layer's output, so its claim on the cache is discounted by the size
of what it would deliver."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PayloadAttention(EvictionMethod):
    name = "payload_attention"
    reconstruction_queries = True
    query_window = 32            # used when no reconstruction pass is offered

    def _looked_at(self, view: LayerView) -> torch.Tensor:
        total = view.attention(reduce="sum")                  # (H_q, T), over the queries, as they come
        return view.group(total, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        payload = view.values.float().abs().sum(dim=-1)       # (H_kv, T): L1 size of what each token delivers
        return Keep.from_topk(self._looked_at(view) * payload, view.budget, view.valid)
