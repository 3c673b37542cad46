"""Peak-shared budgets: each head's share of the layer budget follows how peaked its window attention is; every
head ranks its tokens by that attention, with the opening tokens and the newest 16 protected in all heads."""

import torch

from harness import EvictionMethod, Keep, LayerView


class PeakShared(EvictionMethod):
    name = "peak_shared"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.group(view.attention().sum(1), "mean")
        p = a / a.sum(-1, keepdim=True).clamp_min(1e-9)
        peak = p.max(-1).values
        h = a.shape[0]
        share = (0.5 + peak / peak.sum().clamp_min(1e-9) * h * 0.5)
        k = (share / share.sum() * b * h).floor().long().clamp(min=1, max=t)
        score = a.clone()
        score[:, :4] = float("inf")
        score[:, t - 16:] = float("inf")
        return Keep(tuple(score[i].topk(int(min(k[i], t))).indices.sort().values for i in range(h)))
