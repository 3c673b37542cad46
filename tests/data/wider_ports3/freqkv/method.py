"""Low tide: when the cache is full its older part is rewritten as a few smooth components along the tokens (a
cosine basis), the newest stretch kept exactly as it is."""

import math

import torch

from harness.api import EvictionMethod, LayerView, Rewrite


def _waves(length: int, count: int) -> torch.Tensor:
    grid = torch.arange(length, dtype=torch.float32)
    freq = torch.arange(count, dtype=torch.float32)
    basis = torch.cos(math.pi / length * (grid[None, :] + 0.5) * freq[:, None])
    basis = basis * math.sqrt(2.0 / length)
    basis[0] = basis[0] / math.sqrt(2.0)
    return basis


class LowTide(EvictionMethod):
    name = "low_tide"
    fresh = 64

    def select(self, view: LayerView) -> Rewrite:
        heads, total = view.n_kv_heads, view.n_tokens
        tail = min(self.fresh, view.budget // 2)
        old = total - tail
        slots = view.budget - tail
        waves = _waves(old, slots)
        k_old = torch.einsum("mt,htd->hmd", waves, view.keys[:, :old].float())
        v_old = torch.einsum("mt,htd->hmd", waves, view.values[:, :old].float())
        ks, vs, ps = [], [], []
        for h in range(heads):
            ks.append(torch.cat([k_old[h].to(view.keys.dtype), view.keys[h, old:]]))
            vs.append(torch.cat([v_old[h].to(view.values.dtype), view.values[h, old:]]))
            ps.append(torch.cat([view.positions[h, :slots], view.positions[h, old:]]))
        return Rewrite(keys=tuple(ks), values=tuple(vs), positions=tuple(ps))
