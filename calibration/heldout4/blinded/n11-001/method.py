"""CurDKV (Sengupta et al., 2025, arXiv 2509.15038), ported to the harness: approximate leverage scores of the
keys and of the values (Gaussian random projection, then an orthonormal basis of the projected rows) and keep
the tokens whose combined key/value leverage is largest. Query-agnostic: no attention is computed."""

import torch

from harness import EvictionMethod, Keep, LayerView


def leverage(x: torch.Tensor, proj: torch.Tensor) -> torch.Tensor:
    """(H, T, D) -> (H, T): squared row norms of an orthonormal basis of x @ proj (sketched leverage)."""
    q, _ = torch.linalg.qr(x.float() @ proj)
    return q.pow(2).sum(dim=-1)


class CurDKV(EvictionMethod):
    name = "curdkv"
    sketch = 32
    seed = 0

    def _proj(self, d: int, device) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed)
        return (torch.randn(d, min(self.sketch, d), generator=g) / self.sketch ** 0.5).to(device)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        p = self._proj(view.keys.shape[-1], view.keys.device)
        lk = leverage(view.keys, p)
        lv = leverage(view.values, p)
        return Keep.from_topk(lk * lv, view.budget, view.valid)
