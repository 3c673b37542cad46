"""Quiet-and-unusual: keys with a small norm draw attention (K-norm's observation); among them, prefer the ones that
point away from the layer's average key (KeyDiff's distinctiveness), and always keep the newest stretch."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class QuietUnusual(EvictionMethod):
    name = "quiet_unusual"
    newest = 16
    mix = 0.5

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        quiet = -k.norm(dim=-1)
        quiet = (quiet - quiet.mean(-1, keepdim=True)) / quiet.std(-1, keepdim=True).clamp_min(1e-6)
        centre = F.normalize(k.mean(dim=1, keepdim=True), dim=-1)
        odd = -(F.normalize(k, dim=-1) * centre).sum(-1)
        odd = (odd - odd.mean(-1, keepdim=True)) / odd.std(-1, keepdim=True).clamp_min(1e-6)
        score = quiet + self.mix * odd
        score[:, -self.newest:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
