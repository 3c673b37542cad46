"""Outlier Blend: a query-agnostic score mixing how unusual each key is with how much its neighbourhood reads it.

Two views of the context, both available before any question: (1) an outlier score per key from a randomised
sketch of the key matrix (row norms after whitening by the sketch's triangular factor), and (2) a local reading
score, the attention each token receives from the context queries of its own span, in both directions. Both are
normalised per head and blended with a per-context weight set from their relative spread.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class OutlierBlend(EvictionMethod):
    name = "outlier_blend"
    query_window = 1 << 20
    span = 256
    sketch_width = 128
    sinks = 4
    order_cap = 896  # sketch rows considered; longer contexts are ranked by order statistics

    def _outliers(self, keys: torch.Tensor, seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        t, d = keys.shape[1], keys.shape[2]
        omega = torch.randn(self.sketch_width, t, generator=gen) / self.sketch_width ** 0.5
        out = []
        for k in keys.float():
            r = torch.linalg.qr(omega.to(k.device) @ k, mode="r").R
            r = r + 1e-4 * torch.eye(d, device=k.device)
            u = torch.linalg.solve_triangular(r, k.T, upper=True, left=True).T
            out.append((u * u).sum(-1))
        return torch.stack(out)

    def _local(self, view: LayerView) -> torch.Tensor:
        q, k = view.queries.float(), view.keys.float()
        g, t = view.model.group_size, view.n_tokens
        qpos = view.query_positions
        score = torch.zeros(view.n_kv_heads, t, device=k.device)
        for s in range(0, t, self.span):
            span_pos = view.positions[0, s:s + self.span]
            qi = torch.isin(qpos, span_pos)
            if not bool(qi.any()):
                continue
            qs = q[:, qi].reshape(view.n_kv_heads, -1, q.shape[-1])
            logit = torch.bmm(qs, k[:, s:s + self.span].transpose(1, 2)) * view.model.scale
            score[:, s:s + self.span] += logit.softmax(-1).sum(1)
        return score

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or t > self.order_cap:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        lev = self._outliers(view.keys, 1000 + view.layer)
        loc = self._local(view)
        lev = lev / lev.sum(-1, keepdim=True).clamp_min(1e-9)
        loc = loc / loc.sum(-1, keepdim=True).clamp_min(1e-9)
        lam = loc.std(-1, keepdim=True) / (loc.std(-1, keepdim=True) + lev.std(-1, keepdim=True)).clamp_min(1e-9)
        scores = lam * lev + (1 - lam) * loc
        scores[:, : self.sinks] = float("inf")
        return Keep.from_topk(scores, b, view.valid)
