"""Angle-coded attention retention (board C): cached keys are summarised by a short hierarchy of quantised angles
plus a few radii, and the newest queries rank the cache by the attention they pay the decoded keys. The ranking
therefore reads a few bits per key instead of the full-precision cache, which is what a long reasoning trace on a
memory-bound device can afford at every eviction."""

import math

import torch

from harness import EvictionMethod, Keep, LayerView

_MIXERS: dict[tuple[int, str], torch.Tensor] = {}


def _mixer(d: int, device: torch.device) -> torch.Tensor:
    """A fixed random orthogonal (d x d) matrix (seeded), so that the angles below are evenly spread."""
    key = (d, str(device))
    if key not in _MIXERS:
        gen = torch.Generator().manual_seed(4099 + d)
        q, r = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
        q = q * torch.sign(torch.diagonal(r))[None, :]
        _MIXERS[key] = q.float().to(device)
    return _MIXERS[key]


def _snap(theta: torch.Tensor, lo: float, hi: float, bits: int) -> torch.Tensor:
    """Uniform quantiser with 2**bits cells on [lo, hi): every angle goes to its cell's centre."""
    cells = 1 << bits
    width = (hi - lo) / cells
    idx = torch.floor((theta - lo) / width).clamp(0, cells - 1)
    return lo + (idx + 0.5) * width


def _levels_for(d: int, wanted: int) -> int:
    levels = 0
    while levels < wanted and d % (2 << levels) == 0:
        levels += 1
    return levels


def angle_code(x: torch.Tensor, levels: int, first_bits: int, later_bits: int) -> torch.Tensor:
    """Encode and decode (..., D) vectors: pairs -> (radius, angle), then pairs of radii -> (radius, angle) again,
    ``levels`` times; angles are quantised, the last radii are kept exactly. Returns the reconstruction."""
    angles = []
    r = x
    for lvl in range(levels):
        a, b = r[..., 0::2], r[..., 1::2]
        theta = torch.atan2(b, a)
        if lvl == 0:
            theta = _snap(theta, -math.pi, math.pi, first_bits)
        else:
            theta = _snap(theta, 0.0, math.pi / 2, later_bits)
        angles.append(theta)
        r = torch.sqrt(a * a + b * b)
    for theta in reversed(angles):
        out = torch.empty(*r.shape[:-1], 2 * r.shape[-1], dtype=r.dtype, device=r.device)
        out[..., 0::2] = r * torch.cos(theta)
        out[..., 1::2] = r * torch.sin(theta)
        r = out
    return r


class AngleCodedRetention(EvictionMethod):
    name = "angle_coded_retention"
    query_window = 16
    levels = 3
    first_bits = 3
    later_bits = 2
    n_sink = 4
    n_recent = 24

    def _decoded_keys(self, keys: torch.Tensor) -> torch.Tensor:
        d = keys.shape[-1]
        lv = _levels_for(d, self.levels)
        if lv == 0:
            return keys.float()
        mix = _mixer(d, keys.device)
        y = keys.float() @ mix.T
        return angle_code(y, lv, self.first_bits, self.later_bits) @ mix

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        approx = self._decoded_keys(view.keys)
        h_kv, t, d = approx.shape
        g = view.model.group_size
        rows = view.queries.float().reshape(h_kv, -1, d)
        logits = torch.einsum("hnd,htd->hnt", rows, approx) * view.model.scale
        qpos = view.query_positions.repeat(g)
        valid = view.valid_mask()
        logits = logits.masked_fill((view.positions[:, None, :] > qpos[None, :, None]) | ~valid[:, None, :],
                                    float("-inf"))
        score = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1)
        counts = valid.sum(dim=1)
        for h in range(h_kv):
            n = int(counts[h])
            score[h, : min(self.n_sink, n)] = float("inf")
            score[h, max(0, n - self.n_recent): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
