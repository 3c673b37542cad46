"""Momentum-extrapolated salience (board B_online).

What matters for a compressed context is the attention a token will get from the answer, not the attention it got
so far. We read the trend: over the last 64 context queries, each token's attention is regressed on the query's
position (least squares), and the fitted line is extrapolated over a horizon of 96 future steps. Tokens whose
attention is rising are kept ahead of tokens whose attention is fading, at the same mean. The extrapolated utility
is clipped at zero, averaged over each KV head's query heads; the last 16 context tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

HORIZON = 96
TAIL = 16


def _future_utility(attn: torch.Tensor, horizon: int) -> torch.Tensor:
    """attn (H_q, N, T) -> (H_q, T): sum over the next ``horizon`` steps of the fitted per-token trend."""
    n = attn.shape[1]
    steps = torch.arange(n, dtype=attn.dtype, device=attn.device)
    centred = steps - steps.mean()
    denom = (centred * centred).sum().clamp_min(1e-6)
    level = attn.mean(dim=1)                                             # (H_q, T)
    slope = torch.einsum("n,hnt->ht", centred, attn) / denom
    ahead = (n - 1) / 2.0 + (horizon + 1) / 2.0                          # mean offset of the horizon
    return (level + slope * ahead).clamp_min(0.0) * horizon


class MomentumSalience(EvictionMethod):
    name = "momentum_salience"
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        util = view.group(_future_utility(view.attention(), HORIZON), "mean")
        last = view.positions.max(dim=1, keepdim=True).values
        util = util.masked_fill(view.positions > last - TAIL, float("inf"))
        return Keep.from_topk(util, view.budget)
