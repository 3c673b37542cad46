"""Frame-free coarse keys: each key is taken back to its position-free frame, coded per feature with a few levels
(the rare extreme entries kept exact), brought back to its position, and the closing queries rank the context on
that coarse copy."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _unspin(view: LayerView, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x, dtype=torch.float32)
    for h in range(x.shape[0]):
        out[h] = view.rotate(x[h], -view.positions[h])
    return out


def _respin(view: LayerView, x: torch.Tensor) -> torch.Tensor:
    return torch.stack([view.rotate(x[h], view.positions[h]) for h in range(x.shape[0])])


def _coarse(x: torch.Tensor, bits: int, rare: float) -> torch.Tensor:
    lo = x.amin(dim=1, keepdim=True)
    hi = x.amax(dim=1, keepdim=True)
    step = (hi - lo).clamp_min(1e-6) / (2 ** bits - 1)
    coded = torch.round((x - lo) / step) * step + lo
    cut = x.abs().flatten(0, 1).quantile(1.0 - rare, dim=0)
    return torch.where(x.abs() > cut, x, coded)


class FrameFreeCoarse(EvictionMethod):
    name = "frame_free_coarse"
    query_window = 16
    bits = 3
    rare = 0.01

    def select(self, view: LayerView) -> Keep:
        approx = _respin(view, _coarse(_unspin(view, view.keys), self.bits, self.rare))
        h_kv, t, d = approx.shape
        rows = view.queries.float().reshape(h_kv, -1, d)
        p = torch.softmax(torch.einsum("hnd,htd->hnt", rows, approx) * d ** -0.5, dim=-1)
        return Keep.from_topk(p.sum(dim=1), view.budget, view.valid)
