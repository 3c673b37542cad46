"""Two Clocks: a decode-time cache that remembers attention on two time scales and keeps a token if either
clock vouches for it.

H2O (Zhang et al., 2023, arXiv 2306.14048) sums the attention a token has received over every step; A2SF (Jo et
al., 2024, arXiv 2407.20485) makes that sum forget with one factor per step, so old tokens are not favoured for
having been seen longer. One factor has to choose between catching a token that just became important and
keeping one that matters now and then over a long stretch. Two Clocks runs both: a fast running average
(factor 0.7 per step) and a slow one (0.98), each normalised by the total weight it has accumulated, and ranks a
token by the larger of its two averages. Every query since the previous call (the newest 64 queries are handed
over; a block is at most 32 steps at these caps) updates both clocks in order. The first 4 tokens (StreamingLLM,
arXiv 2309.17453) and the newest 16 are always kept.
"""

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


class TwoClocks(EvictionMethod):
    name = "two_clocks"
    query_window = 64
    clocks = {"fast": 0.7, "slow": 0.98}
    n_sink = 4
    newest = 16

    def _tick(self, view: LayerView) -> dict[str, torch.Tensor]:
        running = {k: view.recall(k) for k in self.clocks}
        weight = {k: float(view.state.get(k + "_w", 0.0)) for k in self.clocks}
        if view.queries is not None and view.query_positions is not None:
            fresh = view.query_positions > view.state.get("last_q", -1)
            m = int(fresh.sum())
            if m:
                read = view.group(view.attention()[:, fresh], "mean")          # (H_kv, m, T), causal
                age = torch.arange(m - 1, -1, -1, device=read.device, dtype=torch.float32)
                for k, rate in self.clocks.items():
                    w = torch.exp(age * math.log(rate))
                    running[k] = running[k] * rate**m + torch.einsum("hmt,m->ht", read, w)
                    weight[k] = weight[k] * rate**m + float(w.sum())
                view.state["last_q"] = int(view.query_positions.max())
        for k in self.clocks:
            view.remember(k, running[k])
            view.state[k + "_w"] = weight[k]
        return {k: running[k] / max(weight[k], 1e-9) for k in self.clocks}

    def select(self, view: LayerView) -> Keep:
        avg = self._tick(view)
        score = torch.maximum(avg["fast"], avg["slow"])
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        lengths = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            score[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
