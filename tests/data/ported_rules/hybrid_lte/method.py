"""Neighbourhood gate: a small fitted filter reads each token with its neighbours (keys and values side by side)
and says how much it is worth keeping; the newest tokens stay whatever it says."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class NeighbourhoodGate(EvictionMethod):
    name = "neighbourhood_gate"
    width = 5
    newest = 32

    def setup(self, model) -> None:
        self.filt = torch.nn.Parameter(torch.load("gate.pt")["weight"])   # (1, 2 * head_dim, width)
        self.bias = torch.nn.Parameter(torch.zeros(1))

    def select(self, view: LayerView) -> Keep:
        feats = torch.cat([view.keys, view.values], dim=-1).float().transpose(1, 2)   # (H, 2d, T)
        worth = torch.sigmoid(F.conv1d(feats, self.filt, self.bias, padding=self.width // 2)).squeeze(1)
        worth[:, -self.newest:] = float("inf")
        return Keep.from_topk(worth, view.budget, view.valid)
