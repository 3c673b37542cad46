"""Displacement-aware retention (board B_online).

Dropping a token renormalises the softmax: the remaining weights grow by 1 / (1 - a) and the output moves toward
them. For a row with output o and weight a on token i, removing i shifts the output by a / (1 - a) * (v_i - o). We
score each token by the size of that shift, summed over the closing rows of the context and over the query heads of
its KV head, and keep the tokens whose removal would move the output most.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DisplacementAware(EvictionMethod):
    name = "displacement_aware"
    query_window = 48

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        weights = view.attention()  # (H_q, N, T)
        vals = view.values.float().repeat_interleave(g, dim=0)  # (H_q, T, D)
        out = weights @ vals  # (H_q, N, D)
        gap = torch.cdist(out, vals)  # (H_q, N, T): ||v_i - o||
        shift = weights / (1.0 - weights).clamp_min(1e-4) * gap
        score = view.group(shift.sum(dim=1), "sum")
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
