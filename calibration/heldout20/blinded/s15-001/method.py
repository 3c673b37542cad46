"""Steady-or-shifting retention (board B_online, query-agnostic prefill).

The closing rows of the context are a stand-in for later questions, but a stand-in that moves: from one row to the
next, some tokens are looked at steadily, others flare up for a row or two. A token that the closing rows *disagree*
about is one that some future query may well need, so its disagreement counts in its favour. Each token is scored by
its average attention over the closing rows plus a multiple of the spread (variance) of that attention across the
rows, smoothed over a small neighbourhood; the closing rows' own tokens are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SteadyOrShifting(EvictionMethod):
    name = "steady_or_shifting"
    query_window = 32
    spread_gain = 150.0
    smooth = 5

    def select(self, view: LayerView) -> Keep:
        rows = view.attention()                                   # (H_q, N, T)
        g = view.model.group_size
        hq, n, t = rows.shape
        per_kv = rows.view(hq // g, g * n, t)                     # pool the group's rows together
        level = per_kv.mean(dim=1)
        spread = per_kv.var(dim=1, unbiased=False)
        score = level + self.spread_gain * spread
        score = F.avg_pool1d(score.unsqueeze(1), self.smooth, 1, self.smooth // 2,
                             count_include_pad=False).squeeze(1)
        closing = view.positions >= int(view.query_positions.min())
        score = torch.where(closing, torch.full_like(score, float("inf")), score)
        return Keep.from_topk(score, view.budget, view.valid)
