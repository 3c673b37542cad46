"""Window attention with a power-law layer schedule (board B_online)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class PowerLawLayers(EvictionMethod):
    name = "power_law_layers"
    query_window = 32
    kernel = 5
    exponent = 0.3

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        n = len(model.attention_layers)
        if n == 0:
            return None
        w = torch.arange(1, n + 1, dtype=torch.float64).pow(-self.exponent)   # (l + 1) ** -p
        total = mean_budget * n
        raw = (w / w.sum() * total).floor().long().clamp(1, n_tokens)
        budgets = [int(b) for b in raw]
        while sum(budgets) > total:  # the floor of 1 or rounding can overspend: take from the largest
            i = max(range(n), key=lambda j: budgets[j])
            budgets[i] -= 1
        return budgets

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        attn = view.group(view.attention(reduce="sum"), "mean")
        scores = F.avg_pool1d(attn[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                              count_include_pad=False)[:, 0]
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
