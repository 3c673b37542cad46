"""Twin anchors (board B_online): keep the tokens that anchor both the key space and the value space.

Query-agnostic. A token is an anchor of a head's key space when its key is hard to express through the other
keys: its statistical leverage, k_i^T (K^T K)^-1 k_i, is high. The attention output is built from values, so a
token that anchors the key space but carries an ordinary value matters less than one that anchors both. Each
token gets the geometric mean of its key leverage and its value leverage; the newest ``tail`` tokens and the
first ``n_sink`` are always kept, the rest by that score.

Leverage is computed sketch-and-solve: a seeded Gaussian sketch S (``rows`` x tokens) compresses the token axis,
R comes from the QR of S K, and the leverage of token i is |k_i R^-1|^2. The sketch is drawn once, seeded, in
``setup``, so every layer and every call shares it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class TwinAnchors(EvictionMethod):
    name = "twin_anchors"
    rows = 128
    span = 1024
    tail = 8
    n_sink = 4
    ridge = 1e-4

    def __init__(self) -> None:
        self.sketch: torch.Tensor | None = None

    def setup(self, model: ModelInfo) -> None:
        g = torch.Generator().manual_seed(20240917)
        self.sketch = torch.randn(self.rows, self.span, generator=g) / self.rows**0.5

    def leverage(self, x: torch.Tensor) -> torch.Tensor:
        """x (H, T, D) -> (H, T) sketched leverage of each row."""
        if self.sketch is None:
            self.setup(None)  # type: ignore[arg-type]
        assert self.sketch is not None
        s = self.sketch.to(x.device)[:, : x.shape[1]]
        x = x[:, : s.shape[1]]
        sx = torch.einsum("rt,htd->hrd", s, x)
        r = torch.linalg.qr(sx, mode="r").R  # (H, D, D)
        eye = torch.eye(r.shape[-1], device=x.device)
        r = r + self.ridge * eye * r.diagonal(dim1=-2, dim2=-1).abs().amax(dim=-1)[:, None, None]
        y = torch.linalg.solve_triangular(r.transpose(1, 2), x.transpose(1, 2), upper=False)  # R^-T x^T: (H, D, T')
        return y.pow(2).sum(dim=1)

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        lk = self.leverage(view.keys.float())
        lv = self.leverage(view.values.float())
        score = (lk * lv).clamp_min(0).sqrt()
        score = F.pad(score, (0, t - score.shape[1]))
        score[:, : self.n_sink] = float("inf")
        score[:, max(0, t - self.tail):] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
