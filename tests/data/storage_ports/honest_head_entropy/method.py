"""Focused-head voting: every query head votes with its window attention, weighted by how focused it is (low
entropy); the votes are summed over the heads of each group."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FocusedVotes(EvictionMethod):
    name = "focused_votes"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        att = view.attention().mean(dim=1)                                   # (H_q, T)
        p = att / att.sum(-1, keepdim=True).clamp_min(1e-9)
        ent = -(p * p.clamp_min(1e-9).log()).sum(-1, keepdim=True)
        votes = att / (1.0 + ent)
        return Keep.from_topk(view.group(votes, "sum"), view.budget, view.valid)
