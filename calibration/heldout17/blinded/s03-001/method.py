"""Renormalisation-shift retention (board A, question-aware prefill).

Dropping a cache entry does not just lose its value vector: the softmax renormalises over what is left, so every
other entry's weight grows and the read-out slides. We score a token by how far its removal would move the read-out
of each question row, measured exactly rather than through its weight alone.

For a row with weights w over the visible entries and read-out r = sum_i w_i v_i, removing entry j leaves
r' = (r - w_j v_j) / (1 - w_j), so the shift is  r - r' = w_j (v_j - r) / (1 - w_j). Its length
|w_j / (1 - w_j)| * ||v_j - r|| is the token's cost for that row; a token's score is the cost summed over the question
rows (question span and the closing 8 rows, causal), averaged over the KV head's query heads. The question span and
the 4 opening tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _per_query_head(x: torch.Tensor, group: int) -> torch.Tensor:
    """(H_kv, T, D) -> (H_q, T, D): each KV head's tensor repeated for its query heads."""
    return x.float().repeat_interleave(group, dim=0)


class RenormShift(EvictionMethod):
    name = "renorm_shift"
    question_queries = True
    query_window = 8
    opening = 4
    row_block = 64

    def _shift_cost(self, view: LayerView) -> torch.Tensor:
        weights = view.attention().float()  # (H_q, N, T), causal; padding 0
        vals = _per_query_head(view.values, view.model.group_size)  # (H_q, T, D)
        cost = torch.zeros(weights.shape[0], weights.shape[2], device=weights.device)
        for start in range(0, weights.shape[1], self.row_block):
            w = weights[:, start:start + self.row_block]  # (H_q, n, T)
            readout = torch.bmm(w, vals)  # (H_q, n, D)
            gap = torch.cdist(readout, vals)  # (H_q, n, T): ||v_j - r||
            odds = w / (1.0 - w).clamp_min(1e-6)
            cost += (odds * gap).sum(dim=1)
        return view.group(cost, "mean")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        cost = self._shift_cost(view)
        pinned = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(cost.masked_fill(pinned, float("inf")), view.budget, view.valid)
