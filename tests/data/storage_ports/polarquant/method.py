"""Angle-coded keys: after a fixed random turn, each key becomes a short tower of angles (pairs of coordinates, then
pairs of radii) stored at a few bits, with one radius; the closing queries score the decoded keys."""

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _turn(d: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(d)
    m, _ = torch.linalg.qr(torch.randn(d, d, generator=g))
    return m


def _code(theta: torch.Tensor, bits: int, span: float) -> torch.Tensor:
    cells = 2 ** bits
    return (torch.floor(theta / span * cells) + 0.5) * span / cells


def _tower(x: torch.Tensor, depth: int, bits: int) -> torch.Tensor:
    angles = []
    r = x
    for _ in range(depth):
        a, b = r[..., 0::2], r[..., 1::2]
        angles.append(_code(torch.atan2(b, a) % (2 * math.pi), bits, 2 * math.pi))
        r = torch.sqrt(a * a + b * b)
    for theta in reversed(angles):
        r = torch.stack([r * torch.cos(theta), r * torch.sin(theta)], dim=-1).flatten(-2)
    return r


class AngleTower(EvictionMethod):
    name = "angle_tower"
    query_window = 16
    depth = 2
    bits = 3

    def select(self, view: LayerView) -> Keep:
        d = view.keys.shape[-1]
        m = _turn(d)
        approx = _tower(view.keys.float() @ m, self.depth, self.bits)
        q = view.queries.float().reshape(view.n_kv_heads, -1, d) @ m
        s = torch.einsum("hnd,htd->hnt", q, approx).softmax(dim=-1).sum(dim=1)
        return Keep.from_topk(s, view.budget, view.valid)
