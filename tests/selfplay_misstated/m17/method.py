"""Step-Collapse: decode-time eviction by pooled attention of the newest queries, newest tokens kept."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class StepCollapse(EvictionMethod):
    name = "step_collapse"
    query_window = 8
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention()                                  # (H_q, 8, T)
        imp = view.group(a.mean(dim=1), "mean")               # (H_kv, T)
        imp = F.max_pool1d(imp[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        lens = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):                      # the newest query_window tokens stay
            n = int(lens[h])
            imp[h, max(0, n - self.query_window):n] = float("inf")
        return Keep.from_topk(imp, view.budget, view.valid)
