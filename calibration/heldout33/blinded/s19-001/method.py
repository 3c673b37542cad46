"""Rank Fusion: two readings of the question's attention (total and peak) fused by reciprocal rank."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RankFusion(EvictionMethod):
    name = "rank_fusion"
    question_queries = True
    damp = 20.0
    sinks = 4

    @staticmethod
    def _rank(x: torch.Tensor) -> torch.Tensor:
        order = x.argsort(dim=-1, descending=True)
        return torch.empty_like(order).scatter_(-1, order, torch.arange(x.shape[-1]).expand_as(order)).float()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()
        total = view.group(att.sum(1), "mean")
        peak = view.group(att.amax(1), "max")
        fused = 1.0 / (self.damp + self._rank(total)) + 1.0 / (self.damp + self._rank(peak))
        fused = fused.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(fused, view.budget, view.valid)
