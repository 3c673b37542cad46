"""Position-free norms: the rotary turn is undone before the key norms are read, so that a token's score does not
depend on where it stands; the lowest-norm keys are kept (K-norm's observation, in the position-free frame)."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PositionFreeNorm(EvictionMethod):
    name = "position_free_norm"

    def select(self, view: LayerView) -> Keep:
        plain = torch.stack([view.rotate(view.keys[h], -view.positions[h]) for h in range(view.n_kv_heads)])
        return Keep.from_topk(-plain.norm(dim=-1), view.budget, view.valid)
