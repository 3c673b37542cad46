"""Low-tide counter (board C, decode-time): over a short history of recent rows, count for each cached entry how
often it was read less than an even share would give it; the entries that are low most often leave first."""

import torch

from harness import EvictionMethod, Keep, LayerView


class LowTideCounter(EvictionMethod):
    name = "low_tide"
    query_window = 64          # the history the counts are taken over
    shelter = 8                # 1/shelter of the budget: newest entries kept regardless

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        reads = view.group(view.attention(), "mean")                    # (H_kv, N, T)
        live = view.valid_mask()
        seen = (view.query_positions.view(1, -1, 1) >= view.positions[:, None, :]) & live[:, None, :]
        fair = 1.0 / seen.sum(dim=-1, keepdim=True).clamp_min(1)        # even share per row
        lows = ((reads < fair) & seen).sum(dim=1).float()               # (H_kv, T)
        score = -lows + view.positions.float() * 1e-7                   # ties: newer first
        shelter = view.budget // self.shelter
        counts = live.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - shelter): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
