"""Half-life retention: each token's half-life is read from the size of its value (large values are remembered
longer); its weight is exp(-age / half-life) written in log space, and the heaviest tokens stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _keep_prob(values: torch.Tensor) -> torch.Tensor:
    size = torch.linalg.vector_norm(values, dim=-1)
    size = size / size.amax(dim=-1, keepdim=True).clamp_min(1e-6)
    return 0.5 + 0.49 * size


class HalfLife(EvictionMethod):
    name = "half_life"

    def select(self, view: LayerView) -> Keep:
        p = _keep_prob(view.values.float())
        newest = view.positions[:, -1:]
        elapsed = newest - view.positions
        weight = torch.exp(elapsed.float() * torch.log(p))
        weight[:, -8:] = float("inf")
        return Keep.from_topk(weight, view.budget, view.valid)
