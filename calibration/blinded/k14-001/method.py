import torch
import torch.nn.functional as F
from harness.api import EvictionMethod, Keep, LayerView, ModelInfo

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    query_window = 32
    p1 = 7
    p2 = 'max'

    def scores(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return view.positions.float()
        assert view.query_positions is not None
        attn = view.attention()
        scores = view.group(attn.sum(dim=1), 'mean')
        p5 = F.max_pool1d if self.p2 == 'max' else F.avg_pool1d
        scores = p5(scores[:, None, :], self.p1, stride=1, padding=self.p1 // 2)[:, 0, :]
        return scores.masked_fill(view.positions >= view.query_positions.min(), float('inf'))

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(self.scores(view), view.budget, view.valid)
    p3 = 20
    p4 = False

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        w = min(self.query_window, mean_budget)
        c = mean_budget if self.p4 else mean_budget - w
        n_layers = len(model.attention_layers)
        p6 = c / self.p3
        p7 = 2 * c - p6
        if p7 >= n_tokens - w:
            p7 = n_tokens - w
            p6 = 2 * c - p7
        step = (p7 - p6) / max(1, n_layers - 1)
        if self.p4:
            if not n_tokens >= p7 >= p6 >= self.query_window:
                return None
            budgets = [round(p7 - layer * step) for layer in range(n_layers)]
            for layer in reversed(range(n_layers)):
                if sum(budgets) <= mean_budget * n_layers:
                    break
                budgets[layer] -= 1
        else:
            budgets = [int(p7 - layer * step) + w for layer in range(n_layers)]
        return [max(1, min(b, n_tokens)) for b in budgets]
