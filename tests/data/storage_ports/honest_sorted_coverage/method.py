"""Coverage-sized retention: each head keeps the fewest tokens whose sorted attention covers 95 % of its mass (never
more than the budget), ranked by that attention."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class CoverageSized(EvictionMethod):
    name = "coverage_sized"
    query_window = 16
    share = 0.95

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="mean"), "mean")
        ordered, _ = att.sort(dim=-1, descending=True)
        mass = ordered.cumsum(-1) / ordered.sum(-1, keepdim=True)
        need = (mass < self.share).sum(-1) + 1
        return Keep.from_topk(att, need.clamp(max=view.budget), view.valid)
