"""Value-aware window score: SnapKV's closing-window attention, each token's share weighted by the length of its
value (VATP's observation), smoothed; the best tokens kept outright, no draw."""

import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class ValueAwareWindow(EvictionMethod):
    name = "value_aware_window"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        got = view.group(view.attention(reduce="sum"), "mean")
        score = got * view.values.float().norm(dim=-1)
        score = F.avg_pool1d(score[:, None], 5, 1, 2)[:, 0]
        score[:, -self.query_window:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
