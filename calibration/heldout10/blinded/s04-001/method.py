"""Long-horizon contribution eviction for decode-time caps: a training-free reading of ForesightKV
(Dong et al., 2026, arXiv 2602.03203).

ForesightKV derives a "golden" eviction from the attention tokens receive in the future and trains a scorer to
predict a token's long-term contribution. We have no trained scorer here; instead we measure the contribution on the
future that has already happened at each eviction: the attention each token received from the queries since it was
created, weighted by how far after it the query came (lag / (lag + 64), so a token still read long after it was
written counts more than one read only by its neighbours). The weighted attention is accumulated across eviction
calls with a decay of 0.9 per call. The first 4 tokens and the newest eighth of the cap are always kept. These are
our choices, not the paper's.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
LAG_HALF = 64.0
DECAY = 0.9


class LongHorizonContribution(EvictionMethod):
    name = "long_horizon_contribution"
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.group(view.attention(), "mean")                       # (H_kv, N, T)
        lag = (view.query_positions.view(1, -1, 1) - view.positions[:, None, :]).clamp_min(0).float()
        weight = lag / (lag + LAG_HALF)
        gained = (probs * weight).sum(dim=1)                               # (H_kv, T)
        total = DECAY * view.recall("contrib") + gained
        view.remember("contrib", total)
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=1, keepdim=True)
        guard = (view.positions < SINKS) | (view.positions > newest - max(1, view.budget // 8))
        return Keep.from_topk(total.masked_fill(guard, float("inf")), view.budget, view.valid)
