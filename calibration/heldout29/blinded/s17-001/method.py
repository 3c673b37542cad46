"""Far Corners: keep the keys that stick out of the layer's key cloud and the keys their own neighbourhood reads.

Two query-agnostic signals, each blind where the other sees. The first asks which keys are hard to express through the
others: a key's statistical leverage within the head's key matrix, estimated through a small random sketch (a seeded
Gaussian mix of the rows, orthogonalised; a key's leverage is its squared norm in the sketch's triangular basis).
The second asks which keys their own stretch of the text reads: the context is cut into stretches of ``stretch``
rows, and inside each stretch every row attends to every key of the stretch, before and after it (no causal mask),
summed per key. Each signal is turned into ranks in [0, 1] and the two ranks are averaged with ``mix``. The newest 16
and the first 4 entries are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


def _to_ranks(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    x = x.masked_fill(~valid, float("-inf"))
    order = x.argsort(dim=-1)
    ranks = torch.empty_like(x)
    ranks.scatter_(-1, order, torch.arange(x.shape[-1], dtype=x.dtype).expand_as(x).contiguous())
    return ranks / max(1, x.shape[-1] - 1)


class FarCorners(EvictionMethod):
    name = "far_corners"
    query_window = 1 << 20
    stretch = 256
    sketch_rows = 128
    mix = 0.5
    n_sink = 4
    n_recent = 16

    def _leverage(self, view: LayerView) -> torch.Tensor:
        keys = view.keys.float() * view.valid_mask()[..., None]
        h_kv, t, d = keys.shape
        gen = torch.Generator().manual_seed(1009 * view.layer + t)
        mix = torch.randn(h_kv, self.sketch_rows, t, generator=gen) / self.sketch_rows ** 0.5
        sketch = torch.bmm(mix, keys)                                          # (H_kv, m, D)
        _, tri = torch.linalg.qr(sketch, mode="reduced")                       # (H_kv, D, D)
        tri = tri + 1e-5 * torch.eye(d) * tri.diagonal(dim1=1, dim2=2).abs().mean(-1)[:, None, None]
        # K R^-1 is close to orthonormal, so a key's leverage is |R^-T k|^2
        basis = torch.linalg.solve_triangular(tri.transpose(1, 2), keys.transpose(1, 2), upper=False)
        return basis.pow(2).sum(dim=1)                                         # (H_kv, T)

    def _neighbourhood(self, view: LayerView) -> torch.Tensor:
        read = torch.zeros(view.n_kv_heads, view.n_tokens)
        qpos = view.query_positions
        top = int(view.positions.max()) + 1
        for lo in range(0, top, self.stretch):
            hi = lo + self.stretch
            rows = torch.nonzero((qpos >= lo) & (qpos < hi)).flatten()
            cols = (view.positions >= lo) & (view.positions < hi) & view.valid_mask()
            if rows.numel() == 0 or not bool(cols.any()):
                continue
            got = reference_attention(view.queries[:, rows], view.keys, view.positions, None,
                                      view.model.group_size, cols, scale=view.model.scale, reduce="sum")
            read += view.group(got, "mean")
        return read

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = self.mix * _to_ranks(self._leverage(view), valid) \
            + (1 - self.mix) * _to_ranks(self._neighbourhood(view), valid)
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.n_recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
