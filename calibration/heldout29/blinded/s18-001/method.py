"""Taper: a cache that narrows with depth, filled by what the latest readers agree on.

Lower layers still mix information broadly and need a wide cache; higher layers settle on a few positions. The
layer budgets taper geometrically with depth (each attention layer gets ``taper`` times the one below it, rescaled so
the mean is the board's budget). Inside a layer the readers are the question rows and the closing rows; their
attention is averaged with weights that rise linearly from the oldest reader to the newest (a reader close to the
end knows best what the continuation will need), then averaged over the query heads of each KV head. The readers'
own rows are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class Taper(EvictionMethod):
    name = "taper"
    query_window = 16
    question_queries = True
    taper = 0.96
    oldest_weight = 0.5

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        n = len(model.attention_layers)
        shape = torch.full((n,), self.taper).pow(torch.arange(n, dtype=torch.float32))
        alloc = (shape / shape.sum() * mean_budget * n).floor().clamp(1, n_tokens).long()
        while int(alloc.sum()) > mean_budget * n:              # the floor of 1 can overspend on tiny budgets
            alloc[int(alloc.argmax())] -= 1
        return alloc.tolist()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = view.attention()                                               # (H_q, N, T)
        n = rows.shape[1]
        trust = torch.linspace(self.oldest_weight, 1.0, n)
        trust = trust / trust.sum()
        agreed = torch.tensordot(trust, rows, dims=([0], [1]))                # (H_q, T)
        agreed = view.group(agreed, "mean")
        agreed = agreed.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(agreed, view.budget, view.valid)
