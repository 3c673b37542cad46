"""Sketched-key question attention (board A).

The question reads the context through a cheap, unbiased sketch of every key instead of the key itself: each key is
split into its norm and direction, the direction is spun by a fixed random orthogonal matrix, every spun coordinate
is snapped to a tiny Gaussian-optimal codebook (2 bits), and the part the codebook misses is summarised by one sign
bit per coordinate of a Gaussian projection. The question's logits are then estimated from the sketch (the codebook
part exactly, the residual part with the sign-bit estimator), softmaxed causally and summed over the question.
The question span and four opening tokens are always kept; the rest of the budget goes to the best-sketched tokens.
"""

from __future__ import annotations

import math

import torch

from harness import EvictionMethod, Keep, LayerView

# optimal scalar levels for a unit Gaussian (positive half, mirrored), by bit width
_GAUSS_LEVELS = {
    1: (0.7979,),
    2: (0.4528, 1.5104),
    3: (0.2451, 0.7560, 1.3440, 2.1520),
}


def _codebook(bits: int, dim: int, device) -> torch.Tensor:
    half = torch.tensor(_GAUSS_LEVELS[bits], device=device)
    return torch.cat([-half.flip(0), half]) / math.sqrt(dim)


def _spin(dim: int, seed: int, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(dim, dim, generator=g))
    q = q * torch.sign(torch.diagonal(r))[None, :]
    return q.to(device)


def _gauss(dim: int, seed: int, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(dim, dim, generator=g).to(device)


class _Sketch:
    """Per-layer sketch of keys (H_kv, T, D): norm, codebook reconstruction, residual norm and residual sign bits."""

    def __init__(self, keys: torch.Tensor, bits: int, seed: int):
        k = keys.float()
        d = k.shape[-1]
        self.spin = _spin(d, seed, k.device)
        self.proj = _gauss(d, seed + 1, k.device)
        self.norm = k.norm(dim=-1, keepdim=True).clamp_min(1e-8)
        unit = k / self.norm
        rotated = unit @ self.spin.T
        levels = _codebook(bits - 1, d, k.device)
        nearest = (rotated[..., None] - levels).abs().argmin(dim=-1)
        coarse = levels[nearest] @ self.spin            # back to the key's frame
        self.coarse = coarse * self.norm
        resid = k - self.coarse
        self.resid_norm = resid.norm(dim=-1)
        self.signs = torch.sign(resid @ self.proj.T)
        self.signs[self.signs == 0] = 1.0

    def logits(self, q: torch.Tensor) -> torch.Tensor:
        """q (H_kv, M, D) -> estimated q.k (H_kv, M, T)."""
        d = q.shape[-1]
        exact = torch.einsum("hmd,htd->hmt", q, self.coarse)
        sq = q @ self.proj.T
        corr = torch.einsum("hmd,htd->hmt", sq, self.signs) * (math.sqrt(math.pi / 2) / d)
        return exact + corr * self.resid_norm[:, None, :]


class SketchedKeyAttention(EvictionMethod):
    name = "sketched_key_attention"
    query_window = 32
    question_queries = True
    total_bits = 3
    anchors = 4
    seed = 1234

    def _score(self, view: LayerView) -> torch.Tensor:
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        sk = _Sketch(view.keys, self.total_bits, self.seed + 17 * view.layer)
        q = view.queries.float()
        n = q.shape[1]
        grouped = q.reshape(h_kv, g * n, d)
        est = sk.logits(grouped).reshape(h_kv, g, n, t) * view.model.scale
        qpos = view.query_positions.to(view.positions.device)
        future = view.positions[:, None, None, :] > qpos[None, None, :, None]
        est = est.masked_fill(future, float("-inf"))
        if view.valid is not None:
            est = est.masked_fill(~view.valid[:, None, None, :], float("-inf"))
        probs = torch.softmax(est, dim=-1).nan_to_num(0.0)
        return probs.sum(dim=2).mean(dim=1)             # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._score(view)
        first_q = int(view.query_positions.min())
        pinned = (view.positions < self.anchors) | (view.positions >= first_q)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
