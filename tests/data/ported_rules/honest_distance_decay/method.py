"""Distance-discounted window attention: each query's attention to a key counts less the further back the key
lies from it (a hyperbolic discount), so that far tokens must be attended strongly to stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Discounted(EvictionMethod):
    name = "discounted"
    query_window = 64
    half_life = 256.0

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")                               # (H, N, T)
        gap = (view.query_positions[:, None] - view.positions[:, None, :]).clamp(min=0).float()   # (H, N, T)
        w = 1.0 / (1.0 + gap / self.half_life)
        return Keep.from_topk((a * w).sum(1), view.budget, view.valid)
