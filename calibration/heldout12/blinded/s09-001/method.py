"""Stratified floor (board B_online).

Without the question, the context's closing rows are the only reader, and they read the recent part of the
context far more than the rest: a plain top-k over their scores empties whole stretches of an early document,
which is where the later question may point. We keep the top-k, but give every stretch a floor. The context
between the opening tokens and the closing window is cut into 8 equal strata; a quarter of the free budget is
shared equally among them, each stratum keeping its own best tokens; the remaining three quarters go to the
best tokens overall.

Scores are SnapKV's without the question (as in the harness's snapkv_qa): attention of the last 32 context
rows, summed over the rows, averaged over the KV head's query heads, max-pooled with a kernel of 7. The 32 rows
and four opening tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the score and StreamingLLM (Xiao et al., 2023, arXiv
2309.17453) for the opening tokens; the stratified floor is our addition.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class StratifiedFloor(EvictionMethod):
    name = "stratified_floor"
    query_window = 32
    strata = 8
    floor_share = 0.25
    opening = 4

    def select(self, view: LayerView) -> Keep:
        n, b = view.n_tokens, view.budget
        if b >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.group(view.attention(reduce="sum"), "mean")
        a = F.max_pool1d(a[:, None], 7, stride=1, padding=3)[:, 0]
        fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.opening)
        n_fixed = int(fixed[0].sum())
        free = max(0, b - n_fixed)
        lo, hi = self.opening, int(view.query_positions.min())
        per = int(free * self.floor_share) // self.strata
        bonus = torch.zeros_like(a)
        if per > 0 and hi - lo >= self.strata:
            edges = torch.linspace(lo, hi, self.strata + 1).round().long().tolist()
            for s, e in zip(edges[:-1], edges[1:]):
                if e - s <= 0:
                    continue
                take = a[:, s:e].topk(min(per, e - s), dim=-1).indices + s
                bonus.scatter_(1, take, 1e6)
        score = torch.where(fixed, 1e9 + view.positions.float(), a + bonus)
        return Keep.from_topk(score, b)
