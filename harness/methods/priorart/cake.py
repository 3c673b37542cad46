"""CAKE (Qin et al., ICLR 2025, arXiv 2503.12491): the eviction indicator of each prefix token is the mean of
the observation window's attention plus gamma times its variance over the window queries (tokens that were
attended unevenly over time may matter later), avg-pooled (kernel 5) per query head, averaged over the GQA
group; top tokens per KV head plus the window. Defaults: window 32, gamma 200, kernel 5 (the CAKE press in
FFY0/DefensiveKV, following the official release). Only the scoring is reproduced: CAKE's cascading layer
budgets from entropy/variance preferences are dropped (uniform budget, as asked).
Settings: pa_cake; pa_cake?gamma=0; pa_cake?gamma=100; pa_cake?kernel=7"""

from typing import ClassVar

import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class CAKE(EvictionMethod):
    name = "pa_cake"
    paper: ClassVar[str] = "CAKE"
    query_window = 32
    gamma = 200.0
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, w, T)
        window = view.positions >= view.query_positions.min()
        indicator = attn.mean(dim=1) + self.gamma * attn.var(dim=1)  # unbiased variance, as torch.var
        indicator = indicator.masked_fill(window.repeat_interleave(view.model.group_size, 0), 0.0)  # prefix only
        pooled = F.avg_pool1d(indicator[:, None, :], self.kernel, 1, self.kernel // 2)[:, 0, :]
        scores = view.group(pooled, "mean")
        return Keep.from_topk(scores.masked_fill(window, float("inf")), view.budget, view.valid)
