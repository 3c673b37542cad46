"""Basis Anchors: without knowing the question, keep the tokens the layer cannot rebuild from the others.
A token whose key points somewhere no other key points, and whose value carries content no other value
carries, is an anchor of the layer's span; tokens well explained by the rest are the cheap ones to drop."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class BasisAnchors(EvictionMethod):
    name = "basis_anchors"
    width = 24          # columns of the random probe
    ridge = 1e-3
    tail = 8
    openers = 2

    def _probe_for(self, d: int) -> torch.Tensor:
        p = getattr(self, "_probe", None)
        if p is None or p.shape[0] != d:
            g = torch.Generator().manual_seed(0x5EED)
            p = self._probe = torch.randn(d, self.width, generator=g) / self.width**0.5
        return p

    def _anchor(self, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """(H, T, D) -> (H, T): x_i^T (X^T X + r I)^-1 x_i of the probed rows, i.e. how much of the span
        only token i covers."""
        y = (x.float() @ self._probe_for(x.shape[-1]).to(x.device)) * valid[..., None]       # (H, T, r)
        gram = y.transpose(1, 2) @ y
        gram = gram + self.ridge * gram.diagonal(dim1=1, dim2=2).mean(-1)[:, None, None] * torch.eye(
            y.shape[-1], device=y.device)
        z = torch.linalg.solve(gram, y.transpose(1, 2))           # (H, r, T)
        return (y * z.transpose(1, 2)).sum(-1).clamp_min(0)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        a = self._anchor(view.keys, valid) * self._anchor(view.values, valid)
        last = view.positions.masked_fill(~valid, -1).amax(dim=1, keepdim=True)
        first = view.positions.masked_fill(~valid, 1 << 40).amin(dim=1, keepdim=True)
        guard = (view.positions > last - self.tail) | (view.positions < first + self.openers)
        return Keep.from_topk(a.masked_fill(guard, float("inf")), view.budget, view.valid)
