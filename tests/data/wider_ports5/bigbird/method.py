"""Anchors, tail and lottery: a few opening entries and the newest stretch always stay; the rest of the room goes to
runs of middle entries drawn by lot, so every region of the context keeps some chance of being seen."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class AnchorsTailLottery(EvictionMethod):
    name = "anchors_tail_lottery"
    anchors = 6
    run = 4

    def select(self, view: LayerView) -> Keep:
        n, b = view.n_tokens, view.budget
        tail = b // 2
        gen = torch.Generator().manual_seed(97 * view.layer + n)
        out = []
        for h in range(view.n_kv_heads):
            fixed = torch.cat([torch.arange(min(self.anchors, n)), torch.arange(max(0, n - tail), n)]).unique()
            middle = torch.arange(min(self.anchors, n), max(0, n - tail))
            runs = middle[: middle.numel() // self.run * self.run].view(-1, self.run)
            room = max(0, b - fixed.numel()) // self.run
            picked = runs[torch.randperm(runs.shape[0], generator=gen)[:room]].flatten()
            out.append(torch.cat([fixed, picked]).unique()[:b])
        return Keep(tuple(out))
