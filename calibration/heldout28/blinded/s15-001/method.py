"""Dent Estimate: keep the entries whose removal would bend the closing rows' outputs the most.

For each of the context's closing rows the attention output o = sum_j a_j v_j is formed. Taking entry j out
renormalises the rest, and the output moves by a_j / (1 - a_j) * |v_j - o|: a large share that points away from
the current output is a large dent. The dent is averaged over the closing rows and the query heads of the KV
head, and the entries with the largest dents stay, with the closing rows' own entries.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class DentEstimate(EvictionMethod):
    name = "dent_estimate"
    query_window = 32

    def dents(self, view: LayerView) -> torch.Tensor:
        g, h_kv = view.model.group_size, view.n_kv_heads
        share = view.attention()  # (H_q, W, T)
        w = share.shape[1]
        share = share.reshape(h_kv, g * w, -1)  # rows of a KV head's query heads side by side
        vals = view.values.float()
        outputs = torch.bmm(share, vals)  # (H_kv, g*W, D)
        away = torch.cdist(outputs, vals)  # (H_kv, g*W, T) = |v_j - o|
        ratio = share / (1.0 - share).clamp_min(1e-6)
        return (ratio * away).mean(dim=1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        dent = self.dents(view)
        closing = view.positions >= view.query_positions.min()
        return Keep.from_topk(dent.masked_fill(closing, float("inf")), view.budget, view.valid)
