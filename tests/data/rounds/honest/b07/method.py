"""KVzip with a K-norm fallback where the repeat pass is unsure (board B_offline).

KVzip's repeat-pass score (max attention over the reconstruction queries, max over the KV head's query heads) is
sharp in some heads and nearly flat in others. We measure, per head, how concentrated it is: the share of the
head's total score held by its top-budget tokens. That share c (between budget/T and 1) sets a per-head blend of
the two scores, each min-max scaled to [0, 1] within the head:

    score = c * kvzip + (1 - c) * knorm,   knorm = scaled negative key L2 norm.

Confident heads follow KVzip almost entirely; diffuse heads lean on the query-free key norm. The first four tokens
are kept.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416) and K-norm (Devoto et al., 2024, arXiv 2406.11430). The
confidence-weighted per-head blend is our change, and a small one.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def minmax(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    lo = x.masked_fill(~mask, float("inf")).amin(dim=1, keepdim=True)
    hi = x.masked_fill(~mask, float("-inf")).amax(dim=1, keepdim=True)
    return ((x - lo) / (hi - lo).clamp_min(1e-12)).masked_fill(~mask, 0.0)


def top_share(score: torch.Tensor, k: int, mask: torch.Tensor) -> torch.Tensor:
    s = score.masked_fill(~mask, 0.0).clamp_min(0.0)
    top = s.topk(max(1, min(k, s.shape[1])), dim=1).values.sum(dim=1)
    return top / s.sum(dim=1).clamp_min(1e-12)


class ConfidentZipNorm(EvictionMethod):
    name = "confident_zip_norm"
    reconstruction_queries = True
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        sink = view.positions < self.n_sink
        body = valid & ~sink
        zip_score = view.attention(reduce="max").unflatten(0, (view.n_kv_heads, view.model.group_size)).amax(dim=1)
        norm_score = -view.keys.float().norm(dim=-1)
        conf = top_share(zip_score, view.budget, body).unsqueeze(1)  # (H_kv, 1)
        blended = conf * minmax(zip_score, body) + (1.0 - conf) * minmax(norm_score, body)
        return Keep.from_topk(blended.masked_fill(sink, float("inf")), view.budget, view.valid)
