"""Compactor (Chari & Van Durme, 2025, arXiv 2507.08143): query-agnostic. Two z-scored scores are blended,
``blending`` x leverage + attention: (1) approximate statistical leverage of the centred pre-RoPE keys through a right
Gaussian sketch of ``sketch_dimension`` columns (diag X (X^T X)^-1 X^T, X = centred keys x sketch; the Cholesky jitter
1e-2 of the official press), (2) non-causal chunked attention: the sequence in chunks of ``chunk_size``, each
chunk's queries attending to the chunk's keys without a causal mask, summed over queries, averaged over the KV
head's query heads, times ||v||, average-pooled over 3 tokens. The first ``sink_start`` and last ``sink_end`` tokens
are always kept and left out of both. Defaults are the official kvpress CompactorPress's (8, 4, chunk 256, sketch 48,
blending = compression ratio, the paper's calibration replaced by that heuristic). The sketch comes from a
torch.Generator seeded with ``seed`` (the press draws torch.randn). Unlike the press, padded keys of the last
chunk are masked and logits are scaled by the model's softmax scale (``scaled``; the press omits it). Without
queries: recency.
Settings: pa_compactor; pa_compactor?blending=0.35; pa_compactor?scaled=False; pa_compactor?chunk_size=128
"""

from typing import ClassVar

import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Compactor(EvictionMethod):
    name = "pa_compactor"
    paper: ClassVar[str] = "Compactor"
    query_window = 1 << 20  # every context query
    sink_start = 8
    sink_end = 4
    chunk_size = 256
    sketch_dimension = 48
    blending = -1.0  # < 0: the compression ratio 1 - budget / T
    scaled = True
    seed = 0

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        a, b = min(self.sink_start, t), t - min(self.sink_end, max(0, t - self.sink_start))
        if view.queries is None or view.budget >= t or view.valid is not None or b - a < 2:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        h, d = view.n_kv_heads, view.keys.shape[-1]
        keys = view.keys[:, a:b].float()
        pre = view.rotate(keys, -view.positions[0, a:b])
        gen = torch.Generator().manual_seed(self.seed)
        phi = torch.randn(h, d, self.sketch_dimension, generator=gen).to(keys.device) / math.sqrt(self.sketch_dimension)
        x = (pre - pre.mean(dim=1, keepdim=True)) @ phi  # (H, S, k)
        gram = x.transpose(1, 2) @ x + 1e-2 * torch.eye(self.sketch_dimension, device=x.device)
        lev = (x * torch.linalg.solve(gram, x.transpose(1, 2)).transpose(1, 2)).sum(-1).clamp_min(0)
        lev = (lev - lev.mean()) / lev.std().clamp_min(1e-6)
        # non-causal chunked attention over the same span; queries placed by position (missing ones count nothing)
        q = torch.zeros(view.queries.shape[0], b - a, d, device=keys.device)
        at = view.query_positions - a
        inside = (at >= 0) & (at < b - a)
        q[:, at[inside]] = view.queries[:, inside].float()
        has_q = torch.zeros(b - a, dtype=torch.bool, device=keys.device)
        has_q[at[inside]] = True
        g, scale = view.model.group_size, (view.model.scale if self.scaled else 1.0)
        attn = torch.zeros(q.shape[0], b - a, device=keys.device)
        for s in range(0, b - a, self.chunk_size):
            kc = keys[:, s: s + self.chunk_size].repeat_interleave(g, dim=0)
            p = (q[:, s: s + self.chunk_size] @ kc.transpose(1, 2) * scale).softmax(dim=-1)
            attn[:, s: s + self.chunk_size] = (p * has_q[s: s + self.chunk_size, None]).sum(dim=1)
        att = view.group(attn, "mean") * view.values[:, a:b].float().norm(dim=-1)
        att = F.avg_pool1d(att[:, None], kernel_size=3, stride=1, padding=1)[:, 0]
        att = (att - att.mean()) / att.std().clamp_min(1e-6)
        lam = self.blending if self.blending >= 0 else 1 - view.budget / t
        mid = lam * lev + att
        scores = torch.full((h, t), float("inf"), device=keys.device)
        scores[:, a:b] = mid
        return Keep.from_topk(scores, view.budget)
