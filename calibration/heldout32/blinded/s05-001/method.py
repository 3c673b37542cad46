"""Outlier Ballast (board B_offline): tokens are kept for two reasons, blended per context: they stick out of the
key space (their weight in a compressed basis of the keys), or the model reads them when asked to replay the
context. How much each reason counts is set from the replay's own concentration."""

import torch

from harness import EvictionMethod, Keep, LayerView


class OutlierBallast(EvictionMethod):
    name = "outlier_ballast"
    reconstruction_queries = True
    sketch_factor = 4
    chunk = 256
    sinks = 4

    @staticmethod
    def _ranked(x: torch.Tensor) -> torch.Tensor:
        r = x.argsort(dim=-1).argsort(dim=-1).float()
        return r / max(1, x.shape[-1] - 1)

    def _standout(self, keys: torch.Tensor) -> torch.Tensor:
        h, t, d = keys.shape
        gen = torch.Generator().manual_seed(1234 + t)
        m = min(t, self.sketch_factor * d)
        out = torch.empty(h, t)
        for i in range(h):
            k = keys[i].double().cpu()
            s = torch.randn(m, t, generator=gen, dtype=torch.float64) / m ** 0.5
            _, r = torch.linalg.qr(s @ k, mode="reduced")
            r = r + 1e-6 * torch.eye(d, dtype=torch.float64)
            z = torch.linalg.solve_triangular(r, k.T, upper=True, left=True).T  # K R^-1
            out[i] = (z * z).sum(-1).float()
        return out.to(keys.device)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        standout = self._ranked(self._standout(view.keys))
        if view.queries is None:
            blend, heard = 1.0, torch.zeros_like(standout)
        else:
            acc = torch.zeros(view.model.n_heads, view.n_tokens, device=view.keys.device)
            for s in range(0, view.queries.shape[1], self.chunk):
                acc += view.attention(view.queries[:, s: s + self.chunk], reduce="sum")
            acc = view.group(acc, "sum")
            share = acc / acc.sum(-1, keepdim=True).clamp_min(1e-9)
            top = share.topk(min(view.budget, share.shape[-1]), dim=-1).values.sum(-1, keepdim=True)
            blend = (1.0 - top).clamp(0.1, 0.9)              # a concentrated replay leans on attention
            heard = self._ranked(acc)
        score = blend * standout + (1.0 - blend) * heard
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
