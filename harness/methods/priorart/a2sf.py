"""A2SF (Jo & Shin, 2024, arXiv 2407.20485): H2O's accumulated attention with a forgetting factor: the attention
query i pays key j is weighted by factor^(N-1-i) (N prompt queries, the newest weighs 1), so old tokens are not
favoured just for having been seen by more queries; as in H2O (and the official code's recent/select split), a
``recent_share`` of the budget goes to the latest tokens, the rest to the top scores, per KV head (query heads
summed). The paper tunes the factor per task/model; 0.1 here is an assumption within its searched range. Queries
whose weight is below 1e-12 are skipped (they cannot move the sum). Without queries: recency.
Settings: pa_a2sf; pa_a2sf?forgetting_factor=0.5; pa_a2sf?forgetting_factor=0.9; pa_a2sf?recent_share=0.3
"""

from typing import ClassVar

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView, reference_attention


class A2SF(EvictionMethod):
    name = "pa_a2sf"
    paper: ClassVar[str] = "A2SF"
    query_window = 1 << 20  # every prompt query
    forgetting_factor = 0.1
    recent_share = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n = view.queries.shape[1]
        f = self.forgetting_factor
        useful = n if f >= 1 else min(n, int(math.log(1e-12) / math.log(max(f, 1e-30))) + 1)
        ages = torch.arange(useful - 1, -1, -1, dtype=torch.float64)
        weights = (f ** ages).float().to(view.keys.device)  # (useful,), oldest first
        acc = torch.zeros(view.queries.shape[0], view.n_tokens, device=view.keys.device)
        for s in range(0, useful, 256):  # chunked: weighted sum over the newest `useful` queries
            q = view.queries[:, n - useful + s: n - useful + s + 256]
            qpos = None if view.query_positions is None else view.query_positions[n - useful + s: n - useful + s + 256]
            attn = _attention(view, q, qpos)  # (H_q, c, T)
            acc += torch.einsum("hct,c->ht", attn, weights[s: s + q.shape[1]])
        scores = view.group(acc, "sum")
        recent = int(view.budget * self.recent_share)
        scores = scores.masked_fill(view.positions > int(view.positions.max()) - recent, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)


def _attention(view: LayerView, q: torch.Tensor, qpos: torch.Tensor | None) -> torch.Tensor:
    """Causal attention of a slice of the view's own queries (view.attention is causal only for all of them)."""
    window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
    return reference_attention(q, view.keys, view.positions, qpos, view.model.group_size, view.valid,
                               scale=view.model.scale, window=window)
