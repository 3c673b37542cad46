"""Focus-window retention: tokens that the closing stretch of the prompt looks at are the ones to keep."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def _smooth(rows: torch.Tensor, width: int) -> torch.Tensor:
    return F.max_pool1d(rows[:, None, :], width, stride=1, padding=width // 2)[:, 0, :]


class FocusRetention(EvictionMethod):
    name = "focus_retention"
    query_window = 32
    smoothing = 7

    def _importance(self, v: LayerView) -> torch.Tensor:
        if v.queries is None:
            return v.positions.float()
        probs = v.attention()
        per_head = probs.sum(dim=1)
        merged = v.group(per_head, "mean")
        merged = _smooth(merged, self.smoothing)
        tail = v.positions >= v.query_positions.min()
        return merged.masked_fill(tail, float("inf"))

    def select(self, v: LayerView) -> Keep:
        budget_left = v.budget
        if budget_left >= v.n_tokens:
            return Keep.from_topk(v.positions.float(), budget_left, v.valid)
        importance = self._importance(v)
        return Keep.from_topk(importance, budget_left, v.valid)
