import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Peak-demand retention: a token is as important as the hardest any closing query ever leans on it."""

    name = "peak_demand"
    query_window = 32
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.attention()                           # (H_q, W, T)
        worst = a.amax(dim=1)                          # the largest demand over the window
        prior = a.mean(dim=1)                          # correction toward the average demand
        s = view.group(worst + prior, "mean")
        s = F.avg_pool1d(s[:, None, :], self.kernel, stride=1, padding=self.kernel // 2)[:, 0, :]
        s[view.positions >= view.query_positions.min()] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
