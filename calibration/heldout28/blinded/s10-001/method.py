"""Payload Weighing: the re-reading pass says who is looked at, the value rows say who has something to hand over.

During the harness's one-off re-reading pass every cached entry collects the attention the re-reading rows pay
it (all rows, all query heads of its KV head, added up). An entry that is looked at but carries a near-empty
value row moves little into the output, so the collected attention is weighed by the size of the entry's value
row (sum of absolute features). Heaviest entries stay. Without a re-reading pass the newest entries stay.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PayloadWeighing(EvictionMethod):
    name = "payload_weighing"
    reconstruction_queries = True

    def _collected(self, view: LayerView) -> torch.Tensor:
        pulled = view.attention(view.queries, reduce="sum")  # (H_q, T), never rows x T
        return view.group(pulled, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        payload = torch.linalg.vector_norm(view.values.float(), ord=1, dim=-1)
        weight = torch.addcmul(torch.zeros_like(payload), self._collected(view), payload)
        return Keep.from_topk(weight, view.budget, view.valid)
