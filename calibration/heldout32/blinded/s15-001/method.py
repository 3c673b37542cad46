"""Tapering Lookback (board B_online): deeper layers keep fewer tokens (a straight taper that keeps the mean
budget), and what each layer keeps is decided by the closing rows' attention weighted toward the latest rows,
which predict what the next tokens will read."""

import torch

from harness import EvictionMethod, Keep, LayerView


class TaperingLookback(EvictionMethod):
    name = "tapering_lookback"
    query_window = 32
    taper = 0.5          # the last layer keeps (1 - taper) of what the first keeps, relative to the mean
    sinks = 4

    def layer_budgets(self, mean_budget: int, n_tokens: int, model) -> list[int] | None:
        n = len(model.attention_layers)
        if n < 2:
            return None
        hi, lo = 1.0 + self.taper / 2, 1.0 - self.taper / 2
        raw = [hi + (lo - hi) * i / (n - 1) for i in range(n)]
        out = [max(1, min(n_tokens, int(mean_budget * r))) for r in raw]
        while sum(out) > mean_budget * n:
            j = max(range(n), key=lambda i: out[i])
            out[j] -= 1
        return out

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = view.attention()                                   # (H_q, W, T)
        w = torch.linspace(0.2, 1.0, rows.shape[1], device=rows.device)
        score = view.group((rows * w[None, :, None]).sum(1), "mean")
        score = score.masked_fill(view.positions >= view.query_positions.max() - 7, float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
