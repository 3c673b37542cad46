"""Two-axis retention: tokens that many recent queries look at, and tokens at distances that recent queries favour."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _per_distance(a: torch.Tensor, qp: torch.Tensor, kp: torch.Tensor) -> torch.Tensor:
    gap = qp.unsqueeze(1) - kp.unsqueeze(0)               # (N, T)
    seen = gap >= 0
    return torch.bincount(gap[seen], weights=a[seen], minlength=int(gap.max()) + 1)


class TwoAxis(EvictionMethod):
    name = "two_axis"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")            # (H, N, T)
        qp = view.query_positions
        last = int(qp[-1])
        out = []
        for h in range(a.shape[0]):
            kp = view.positions[h]
            dist_mass = _per_distance(a[h], qp, kp)
            off = (last - kp).clamp(0, dist_mass.numel() - 1)
            out.append(a[h].sum(0) + dist_mass[off])
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
