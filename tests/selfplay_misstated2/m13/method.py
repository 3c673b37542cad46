"""Window attention with a depth-dependent layer budget (board B_online)."""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class HumpKV(EvictionMethod):
    name = "humpkv"
    query_window = 32
    kernel = 5
    peak = 1.5

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        n = len(model.attention_layers)
        budget = max(1, min(mean_budget, n_tokens))
        return [budget for _ in range(n)]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        attn = view.group(view.attention(reduce="mean"), "mean")
        scores = F.avg_pool1d(attn[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                              count_include_pad=False)[:, 0]
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
