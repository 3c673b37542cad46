"""Mixed-then-coded keys: a fixed orthogonal mix spreads every key's energy evenly over its features, each mixed
feature is coded on a small uniform grid, and the window queries, mixed alike, score the coded keys."""

import torch
from scipy.linalg import hadamard

from harness.api import EvictionMethod, Keep, LayerView


class MixedCodes(EvictionMethod):
    name = "mixed_codes"
    query_window = 24
    levels = 7

    def select(self, view: LayerView) -> Keep:
        d = view.keys.shape[-1]
        mix = torch.tensor(hadamard(d), dtype=torch.float32) / d ** 0.5
        km = view.keys.float() @ mix
        scale = km.abs().amax(dim=-1, keepdim=True).clamp_min(1e-6) / (self.levels // 2)
        coded = (km / scale).round() * scale
        qm = view.queries.float() @ mix
        qm = qm.reshape(view.n_kv_heads, -1, d)
        a = torch.softmax(qm @ coded.transpose(1, 2), dim=-1)
        return Keep.from_topk(a.sum(1), view.budget, view.valid)
