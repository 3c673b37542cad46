"""Anchor-and-spread: a handful of anchor entries per head are the ones with the loudest keys; every other entry is
judged by how much it repeats an anchor, and the least repetitive ones fill the cache."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class AnchorSpread(EvictionMethod):
    name = "anchor_spread"
    anchors = 4

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        loud = k.abs().sum(dim=-1)  # L1 magnitude per entry
        a = min(self.anchors, view.n_tokens)
        picks = loud.topk(a, dim=-1).indices
        unit = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        anchor_dirs = torch.gather(unit, 1, picks[..., None].expand(-1, -1, k.shape[-1]))
        echo = torch.einsum("htd,had->hta", unit, anchor_dirs).amax(dim=-1)
        score = -echo
        score.scatter_(1, picks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
