"""Tapering Consensus: shallow layers keep more, deep layers keep less, and what each keeps is what the latest
tokens agree on.

Budgets: the layers' shares fall linearly with depth, from 1.6x the mean at the first attention layer to 0.4x
at the last (same total). Selection: the last 24 prompt queries (on board A they end with the question) each
score the context by their attention, newer queries weighing more (weights rising linearly from 0.5 to 1);
the weighted sum, averaged over a KV head's query heads, ranks the tokens; the newest 8 tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TaperingConsensus(EvictionMethod):
    name = "tapering_consensus"
    query_window = 24
    top_share = 1.6
    bottom_share = 0.4
    pinned = 8

    def layer_budgets(self, mean_budget: int, n_tokens: int, model) -> list[int] | None:
        layers = model.attention_layers
        n = len(layers)
        if n < 2:
            return None
        shares = torch.linspace(self.top_share, self.bottom_share, n)
        shares = shares / shares.mean()
        raw = (shares * mean_budget).floor().long().clamp(min=1)
        while int(raw.sum()) > mean_budget * n:
            raw[int(raw.argmax())] -= 1
        return [int(x) for x in raw]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention()                                      # (H_q, N, T)
        n = a.shape[1]
        weight = torch.linspace(0.5, 1.0, n, device=a.device)
        agree = view.group((a * weight[None, :, None]).sum(dim=1), "mean")
        edge = view.query_positions.sort().values[-min(self.pinned, n)]
        agree = agree.masked_fill(view.positions >= edge, float("inf"))
        return Keep.from_topk(agree, view.budget, view.valid)
