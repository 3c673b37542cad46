"""First Choice: count how often the model, re-reading its context, looks first at each token.

The one-off reconstruction pass (board B_offline) hands over the queries of the model repeating its
context. Each re-read query and query head casts one vote, for the token it attends to most; tokens are
ranked by votes (over the group's query heads), ties broken by their largest attention.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class FirstChoice(EvictionMethod):
    name = "first_choice"
    query_window = 16
    reconstruction_queries = True
    chunk = 256
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        hq, n = view.queries.shape[0], view.queries.shape[1]
        votes = torch.zeros(hq, view.n_tokens)
        peak = torch.zeros(hq, view.n_tokens)
        for s in range(0, n, self.chunk):
            a = view.attention(view.queries[:, s:s + self.chunk])  # (H_q, c, T)
            top = a.argmax(dim=-1)  # (H_q, c)
            votes.scatter_add_(1, top, torch.ones_like(top, dtype=votes.dtype))
            peak = torch.maximum(peak, a.max(dim=1).values)
        score = view.group(votes, "sum") + view.group(peak, "max")  # peak < 1: only breaks ties
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
