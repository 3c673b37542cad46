"""Chunked window attention: the window queries' attention is computed slice by slice over the context (to bound
memory), the slices' scores are joined, and one ranking over the whole context decides."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SlicedScan(EvictionMethod):
    name = "sliced_scan"
    query_window = 16
    width = 512

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float().reshape(view.n_kv_heads, -1, view.keys.shape[-1])
        logits = []
        for start in range(0, view.n_tokens, self.width):
            k = view.keys[:, start:start + self.width].float()
            logits.append(q @ k.transpose(1, 2))
        s = torch.softmax(torch.cat(logits, dim=-1) * view.model.scale, dim=-1).sum(1)
        return Keep.from_topk(s, view.budget, view.valid)
