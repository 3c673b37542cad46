"""Span-coverage scoring (board B_online, attention-free apart from one summary direction).

A good retained set spans the directions the keys occupy, so that whatever the future question asks, some kept key
answers it. Per KV head we compute each key's ridge leverage, its share of the key matrix's spread (k^T (K^T K +
lambda I)^-1 k), and weight it by how well the key lines up with the closing queries' mean direction.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SpanCoverage(EvictionMethod):
    name = "span_coverage"
    query_window = 16
    ridge = 1e-2
    align_power = 0.5
    sinks = 4

    def _leverage(self, k: torch.Tensor) -> torch.Tensor:
        """(S, D) -> (S,) ridge leverage scores."""
        gram = k.T @ k
        lam = self.ridge * gram.diagonal().mean().clamp_min(1e-6)
        eye = torch.eye(gram.shape[0], device=k.device, dtype=gram.dtype)
        sol = torch.linalg.solve(gram + lam * eye, k.T)  # (D, S)
        return (k * sol.T).sum(dim=-1).clamp_min(0)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        keys = view.keys.float()
        score = torch.zeros(view.keys.shape[:2], device=keys.device)
        g = view.model.group_size
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(-1)
            k = keys[h, idx]
            lev = self._leverage(k - k.mean(dim=0, keepdim=True))
            if view.queries is not None:
                qdir = view.queries[h * g:(h + 1) * g].float().mean(dim=(0, 1))
                align = torch.softmax(k @ qdir * view.model.scale, dim=0) * k.shape[0]
                lev = lev * align.clamp_min(1e-6).pow(self.align_power)
            score[h, idx] = lev
        last = view.query_positions.min() if view.query_positions is not None else view.positions.max() + 1
        protect = (view.positions < self.sinks) | (view.positions >= last)
        return Keep.from_topk(score.masked_fill(protect, float("inf")), view.budget, view.valid)
