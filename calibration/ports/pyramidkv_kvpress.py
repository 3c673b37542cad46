import math

import torch
from torch import nn
from torch.nn import functional as F

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo


def depth_share(layer: int, n_layers: int, q_len: int, ratio: float, w: int, beta: int) -> int:
    cap = w + q_len * (1 - ratio)
    low = (cap - w) / beta
    high = (cap - w) * 2 - low
    if high >= q_len - w:
        high = q_len - w
        low = (cap - w) * 2 - high
    if not (q_len >= high >= low >= w):
        return round(q_len * (1 - ratio))
    step = (high - low) / (n_layers - 1)
    return round(high - layer * step)


class TaperedBudget(EvictionMethod):
    name = "tapered"
    query_window = 64
    kernel_size = 5
    beta = 20

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        ratio = 1 - mean_budget / n_tokens
        return [depth_share(i, model.n_layers, n_tokens, ratio, self.query_window, self.beta)
                for i in range(model.n_layers)]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        win = view.queries.shape[1]
        n = view.n_tokens
        keys = view.keys.repeat_interleave(view.model.group_size, dim=0)
        a = torch.matmul(view.queries, keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])
        causal = torch.triu(torch.ones_like(a) * float("-inf"), diagonal=n - win + 1)
        a += causal
        a = nn.functional.softmax(a, dim=-1, dtype=torch.float32)[..., :-win]
        s = F.avg_pool1d(a.mean(dim=-2), kernel_size=self.kernel_size, padding=self.kernel_size // 2, stride=1)
        s = s.view(view.n_kv_heads, view.model.group_size, n - win).mean(1)
        s = F.pad(s, (0, win), value=s.max().item() + 1)
        return Keep.from_topk(s, view.budget, view.valid)
