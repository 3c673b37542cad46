"""Settled tokens: each layer remembers its keys on a running list; a token whose key sits where the previous layer
put it adds nothing at this depth, so the tokens that moved most since that layer stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Settled(EvictionMethod):
    name = "settled"
    guard = 8

    def setup(self, model) -> None:
        self.trail = []

    def select(self, view: LayerView) -> Keep:
        cur = view.keys.float()
        prev = self.trail[-1] if self.trail else None
        self.trail.append(cur)
        if len(self.trail) > 2:
            self.trail.pop(0)
        if prev is None or prev.shape != cur.shape:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        unit = cur / cur.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        old = prev / prev.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        moved = 1.0 - (unit * old).sum(-1)
        moved[:, :self.guard] = float("inf")
        return Keep.from_topk(moved, view.budget, view.valid)
