"""Rank-aligned retention: each head orders its tokens by value-weighted window attention; the heads' i-th choices
form one aligned slot, scored by the heads' average at that rank, and a layer keeps as many slots as pass a bar
shared by every layer, each head its own top tokens."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class RankSlots(EvictionMethod):
    name = "rank_slots"
    query_window = 32
    bar = 1e-3

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="mean"), "mean")          # (H_kv, T)
        s = att * view.values.float().norm(dim=-1)
        ordered, _ = torch.sort(s, dim=-1, descending=True)
        slot = ordered.mean(dim=0)                                          # one score per rank
        n = int((slot > self.bar).sum().clamp(1, view.budget))
        return Keep.from_topk(s, n, view.valid)
