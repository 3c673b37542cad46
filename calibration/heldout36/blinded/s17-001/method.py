"""Distance-Fair Window: window attention with the window's own distance profile divided out.

Closing queries attend more to nearby tokens whatever they say, so window attention is mostly recency.
The window's attention is regrouped by distance (query position minus key position, in log-spaced
bins); each token's attention is divided by the mean attention at its distance, so a far token that
is read as much as a near one ranks as high. The ratio is blended with the raw attention rank.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DistanceFairWindow(EvictionMethod):
    name = "distance_fair_window"
    query_window = 32
    fair_share = 0.6
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention()  # (H_q, W, T)
        qpos = view.query_positions.float()
        dist = (qpos[:, None] - view.positions[0].float()[None, :]).clamp_min(0)  # (W, T)
        bins = torch.log2(dist + 1).floor().long()
        nb = int(bins.max()) + 1
        per_bin = torch.zeros(a.shape[0], nb).index_add_(1, bins.flatten(), a.flatten(1))
        counts = torch.bincount(bins.flatten(), minlength=nb).clamp_min(1)
        prior = (per_bin / counts)[:, bins]  # (H_q, W, T)
        fair = (a / prior.clamp_min(1e-9)).mean(dim=1)
        raw = a.mean(dim=1)
        rank = lambda x: x.argsort(-1).argsort(-1).float() / max(1, x.shape[-1] - 1)
        score = view.group(self.fair_share * rank(fair) + (1 - self.fair_share) * rank(raw), "mean")
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
