"""Tapered-depth consensus (board C, decode-time eviction).

Two observations drive it. Deeper layers of a decoder need less of their cache than shallow ones: their attention
concentrates on fewer tokens. And the most recent queries agree well on which tokens matter. So every layer is given
a cap that tapers linearly with depth (the first layer keeps the full cap, the last 55 % of it, the mean pinned to
what the board grants), and at each eviction round a layer keeps the tokens its newest 24 queries attend to most on
average (their consensus), plus those queries' own tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TaperedDepthConsensus(EvictionMethod):
    name = "tapered_consensus"
    query_window = 24
    floor = 0.55

    def layer_budgets(self, mean_budget: int, n_tokens: int, model) -> list[int]:
        L = len(model.attention_layers)
        if L == 1:
            return [mean_budget]
        shape = torch.linspace(1.0, self.floor, L)
        raw = shape * mean_budget
        return [max(8, min(mean_budget, int(b))) for b in raw]

    def select(self, view: LayerView) -> Keep:
        avg = view.attention(reduce="mean")                 # (H_q, T): consensus of the newest rows
        agree = view.group(avg, "mean")
        qmin = int(view.query_positions.min()) if view.query_positions is not None else None
        if qmin is not None:
            agree = agree.masked_fill(view.positions >= qmin, 2.0)
        return Keep.from_topk(agree, view.budget, view.valid)
