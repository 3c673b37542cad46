"""Loki (Singhania et al., 2024, arXiv 2406.02542): keys are low-rank, so attention scores are approximated in
the space of the keys' top principal components: q and k are projected on the first d_f = 25% of the
components and the approximate scores pick the top-k keys. The paper computes the PCA offline on a calibration
set (WikiText) per layer and head; here, with no calibration set, the PCA is that of the view's own keys per KV
head (post-RoPE keys, as cached). Loki selects per query at decode; at prefill the query is the last prompt
query (query_window 1), the approximate softmax is averaged over each KV head's query heads. No sinks or window
(Loki keeps none).
Settings: pa_loki; pa_loki?rank_fraction=0.125; pa_loki?rank_fraction=0.5; pa_loki?query_window=32"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView, reference_attention


class Loki(EvictionMethod):
    name = "pa_loki"
    paper: ClassVar[str] = "Loki"
    query_window = 1
    rank_fraction = 0.25  # d_f / D

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        keys, valid = view.keys.float(), view.valid_mask()
        w = valid[..., None].float()
        mean = (keys * w).sum(1, keepdim=True) / w.sum(1, keepdim=True).clamp_min(1)
        centred = (keys - mean) * w
        _, vecs = torch.linalg.eigh(centred.transpose(1, 2) @ centred)  # ascending eigenvalues
        r = max(1, int(self.rank_fraction * keys.shape[-1]))
        basis = vecs[..., -r:]  # (H_kv, D, r): the top principal components
        q = view.queries.float() @ basis.repeat_interleave(view.model.group_size, 0)
        approx = reference_attention(q, keys @ basis, view.positions, view.query_positions, view.model.group_size,
                                     view.valid, scale=view.model.scale, reduce="sum")
        return Keep.from_topk(view.group(approx, "mean"), view.budget, view.valid)
