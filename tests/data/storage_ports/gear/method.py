"""Corrected coarse keys: a cheap coarse code of every key plus a thin correction of what the code missed (the few
leading directions of the error) make a stand-in the recent queries rank the cache with."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _coarse(x: torch.Tensor, levels: int) -> torch.Tensor:
    top = x.abs().amax(dim=-1, keepdim=True).clamp_min(1e-6)
    step = top / levels
    return torch.round(x / step) * step


def _thin_fix(err: torch.Tensor, rank: int) -> torch.Tensor:
    u, s, vh = torch.linalg.svd(err, full_matrices=False)
    return u[..., :rank] @ torch.diag_embed(s[..., :rank]) @ vh[..., :rank, :]


class CorrectedCoarse(EvictionMethod):
    name = "corrected_coarse"
    query_window = 32
    levels = 2
    rank = 4

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        base = _coarse(k, self.levels)
        stand_in = base + _thin_fix(k - base, self.rank)
        h_kv, t, d = k.shape
        q = view.queries.float().reshape(h_kv, -1, d)
        w = torch.softmax(torch.matmul(q, stand_in.transpose(-1, -2)) / d ** 0.5, dim=-1)
        return Keep.from_topk(w.mean(dim=1), view.budget, view.valid)
