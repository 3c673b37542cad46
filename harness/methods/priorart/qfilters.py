"""Q-Filters (Godey et al., 2025, arXiv 2503.02812): queries and keys share an anisotropic direction per head:
with u_h the principal right singular vector of the head's queries, oriented so that the queries' mean
projection on it is positive, E_q[<q, k>] ~ kappa_h <k, u_h> (kappa_h > 0); keys are scored by <k, u_h> and the
highest kept, no attention computed, no window kept. (kvpress's QFilterPress scores -<k, f_h> with its stored
filters f_h; with f_h = -u_h it is the same ranking.) The paper calibrates u_h once per model on a sample of
queries; no calibration set here, so u_h is the SVD of the view's available queries (the last 1,024 prompt
queries, post-RoPE as the cached keys), all query heads of the KV head's group stacked (one filter per KV head,
as the released filters).
Settings: pa_qfilters; pa_qfilters?query_window=4096; pa_qfilters?query_window=128; pa_qfilters?query_window=32"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class QFilters(EvictionMethod):
    name = "pa_qfilters"
    paper: ClassVar[str] = "Q-Filters"
    query_window = 1024

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries.float()
        stacked = q.reshape(view.n_kv_heads, -1, q.shape[-1])  # (H_kv, g * N, D): the group's queries
        u = torch.linalg.svd(stacked, full_matrices=False).Vh[:, 0, :]  # (H_kv, D)
        sign = torch.sign((stacked @ u[:, :, None]).mean(dim=(1, 2)))
        u = u * torch.where(sign == 0, torch.ones_like(sign), sign)[:, None]
        scores = (view.keys.float() @ u[:, :, None])[..., 0]
        return Keep.from_topk(scores, view.budget, view.valid)
