import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SeenMass(EvictionMethod):
    name = "seen_mass"
    query_window = 1 << 30

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.queries.shape[1] != view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n = view.n_tokens
        k = view.keys.repeat_interleave(view.model.group_size, dim=0)
        att = view.queries @ k.transpose(-1, -2) / math.sqrt(k.shape[-1])
        att = att + torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        att = att.softmax(dim=-1)
        s = att.sum(1)
        seen_by = torch.arange(n, 0, -1).to(s.dtype)
        s = s / seen_by
        s = s.view(view.n_kv_heads, -1, n).mean(1)
        return Keep.from_topk(s, view.budget, view.valid)
