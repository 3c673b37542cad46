"""Depth-stable tokens: a token whose key points the same way as it did one layer below carries nothing new at this
depth; the tokens whose key direction turned most between the two layers are the ones kept."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class DepthTurn(EvictionMethod):
    name = "depth_turn"
    newest = 16

    def setup(self, model) -> None:
        self.below = None

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        below = self.below
        self.below = k
        if below is None or below.shape != k.shape:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = F.normalize(k, dim=-1)
        b = F.normalize(below, dim=-1)
        turn = torch.arccos((a * b).sum(-1).clamp(-1.0, 1.0))
        turn[:, -self.newest:] = float("inf")
        return Keep.from_topk(turn, view.budget, view.valid)
