"""Head panels: query heads whose window attention rises and falls together are grouped; every head of a group
ranks the context by the group's pooled attention rather than its own."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _panels(rows: torch.Tensor, bar: float) -> torch.Tensor:
    """Greedy grouping of rows whose correlation with a group leader passes ``bar``; the leader of every row."""
    c = torch.corrcoef(rows)
    leader = torch.arange(rows.shape[0])
    for i in range(rows.shape[0]):
        for j in range(i):
            if leader[j] == j and c[i, j] > bar:
                leader[i] = j
                break
    return leader


class HeadPanels(EvictionMethod):
    name = "head_panels"
    query_window = 32
    bar = 0.8

    def select(self, view: LayerView) -> Keep:
        per_head = view.attention().sum(dim=1)                  # (H_q, T)
        leader = _panels(per_head, self.bar)
        pooled = torch.zeros_like(per_head).index_add_(0, leader, per_head)
        shared = pooled[leader]
        return Keep.from_topk(view.group(shared, "mean"), view.budget, view.valid)
