"""Budget-Scaled Pooling: SnapKV (Li et al., 2024) with a pooling width that follows the compression ratio.

SnapKV scores the context by the attention of the last prompt queries and smooths the scores with a fixed 1-D
pooling kernel so that kept tokens come with some of their neighbours. A fixed kernel is too wide when the
budget is generous (it spends slots on neighbours of tokens that would be kept anyway) and too narrow when it
is tight (isolated survivors lose the words around them). Here the kernel grows with the square root of the
compression ratio: width = 2 * round(sqrt(T / budget)) + 1, between 3 and 15. The observation window is the
context's own last 32 queries (board B: the question is not known yet) and is kept, as in SnapKV.
"""

import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class BudgetScaledPooling(EvictionMethod):
    name = "budget_scaled_pooling"
    query_window = 32

    def width(self, n_tokens: int, budget: int) -> int:
        return max(3, min(15, 2 * round(math.sqrt(n_tokens / max(1, budget))) + 1))

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")
        w = self.width(view.n_tokens, view.budget)
        s = F.max_pool1d(s[:, None], w, stride=1, padding=w // 2)[:, 0]
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
