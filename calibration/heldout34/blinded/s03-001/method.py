"""Row Leverage: keep the tokens the cache's key and value matrices cannot do without."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RowLeverage(EvictionMethod):
    name = "row_leverage"
    rank = 24            # sketch width
    rows = 640           # rows per sketch tile
    lead = 4
    tail = 32

    def _leverage(self, m: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """Approximate statistical leverage of each row of m (t, D) from a Gaussian sketch."""
        sketch = m @ torch.randn(m.shape[1], self.rank, generator=gen) / self.rank ** 0.5
        basis, _ = torch.linalg.qr(sketch)                                 # (t, r), orthonormal columns
        return basis.pow(2).sum(dim=-1)

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        gen = torch.Generator().manual_seed(1234 + view.layer)
        t = min(n, self.rows)
        score = torch.zeros(view.n_kv_heads, n)
        for h in range(view.n_kv_heads):
            k = view.keys[h, :t].float()
            v = view.values[h, :t].float()
            score[h, :t] = (self._leverage(k - k.mean(0), gen) * self._leverage(v, gen)).sqrt()
        score[:, : self.lead] = float("inf")
        score[:, max(0, n - self.tail):] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
