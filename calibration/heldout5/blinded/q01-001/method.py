"""Gram-conditioned salience: keys that span directions the rest of the cache does not cover, weighted by how
strongly the context's own re-reading queries land on them."""

import torch

from harness import EvictionMethod, Keep, LayerView


class _GramConditioner:
    """Per-head conditioning of the key Gram matrix: how much of a key cannot be explained by the others."""

    def __init__(self, ridge: float = 0.05):
        self.ridge = ridge

    def spread(self, k: torch.Tensor) -> torch.Tensor:
        # k: (n, d). h_i = k_i^T (K^T K + lam I)^{-1} k_i, lam relative to the mean eigenvalue
        kk = k.double()
        gram = kk.transpose(0, 1) @ kk
        lam = self.ridge * torch.diagonal(gram).mean().clamp_min(1e-6)
        gram = gram + lam * torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
        chol = torch.linalg.cholesky(gram)
        z = torch.cholesky_solve(kk.transpose(0, 1), chol)  # (d, n)
        return (kk * z.transpose(0, 1)).sum(dim=1).float().clamp_min(0.0)


class GramSalience(EvictionMethod):
    name = "gram_salience"
    query_window = 32
    reconstruction_queries = True
    anchors = 4

    def setup(self, model):
        self._cond = _GramConditioner()

    def _alignment(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return torch.ones(view.keys.shape[:2], device=view.keys.device)
        peak = view.attention(reduce="max")          # (H_q, T): strongest hit from any re-reading query
        return view.group(peak, "mean")

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_cond"):
            self._cond = _GramConditioner()
        valid = view.valid_mask()
        align = self._alignment(view)
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            n = idx.numel()
            if view.budget >= n:
                out.append(idx)
                continue
            lev = self._cond.spread(view.keys[h, idx].float())
            score = lev * align[h, idx]
            score[: min(self.anchors, n)] = float("inf")
            order = torch.argsort(score, descending=True)[: view.budget]
            out.append(idx[order].sort().values)
        return Keep(tuple(out))
