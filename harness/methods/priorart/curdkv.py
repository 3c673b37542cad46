"""CurDKV (Sengupta et al., 2025, NeurIPS, arXiv 2509.15038, "Value-Guided KV Compression ... Approximated CUR"):
approximate CUR leverage scores of the attention output: each token's squared key norm and squared value norm
(optionally of a Gaussian projection to ``rank`` dims) are normalised within local windows of ``local_window``
tokens, multiplied (``leverage_type`` kv_product), normalised over the sequence; the first ``n_sink`` tokens always
stay. Defaults are the official kvpress CURPress's (4 sinks, kv_product, windows of 16, no random projection); the
projection, when on, draws from a torch.Generator seeded with ``seed`` (deterministic; the press uses torch.randn).
Settings: pa_curdkv; pa_curdkv?use_random_leverage=True; pa_curdkv?use_local_approximation=False
"""

from typing import ClassVar

import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class CurDKV(EvictionMethod):
    name = "pa_curdkv"
    paper: ClassVar[str] = "CurDKV"
    n_sink = 4
    leverage_type = "kv_product"  # key, value, kv_avg or kv_product
    use_random_leverage = False
    rank = 20
    seed = 0
    use_local_approximation = True
    local_window = 16

    def _local(self, x: torch.Tensor) -> torch.Tensor:
        h, n = x.shape
        w = self.local_window
        x = F.pad(x, (0, (w - n % w) % w)).reshape(h, -1, w)
        return (x / x.sum(dim=-1, keepdim=True)).reshape(h, -1)[:, :n]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        k, v = view.keys.float(), view.values.float()
        if self.use_random_leverage:
            g = torch.Generator().manual_seed(self.seed)
            proj = (torch.randn(k.shape[-1], self.rank, generator=g) / math.sqrt(self.rank)).to(k.device)
            k, v = k @ proj, v @ proj
        k2, v2 = (k**2).sum(dim=-1), (v**2).sum(dim=-1)
        if self.use_local_approximation:
            k2, v2 = self._local(k2), self._local(v2)
        scores = {"key": k2, "value": v2, "kv_avg": (k2 + v2) / 2}.get(self.leverage_type, k2 * v2)
        scores = scores / scores.sum(dim=-1, keepdim=True)
        return Keep.from_topk(scores.masked_fill(view.positions < self.n_sink, 1.0), view.budget, view.valid)
