"""Random eviction: a uniformly random subset of each head's tokens, seeded per layer for reproducibility."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class RandomEviction(EvictionMethod):
    name = "random"
    seed = 0

    def select(self, view: LayerView) -> Keep:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + view.layer * 7919 + view.n_tokens)
        scores = torch.rand(view.keys.shape[:2], generator=g).to(view.keys.device)
        return Keep.from_topk(scores, view.budget, view.valid)
