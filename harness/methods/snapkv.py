"""SnapKV (Li et al., 2024, arXiv 2404.14469): score prefix tokens by the attention the last ``window``
queries pay them, summed over the window, smoothed by 1-D pooling, averaged over each KV head's query heads;
keep the top (budget - window) plus the window itself. Defaults are the paper's LongBench configs
(window 32, kernel 7, max-pool) rather than kvpress's (64, 5, avg-pool)."""

import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class SnapKV(EvictionMethod):
    name = "snapkv"
    query_window = 32
    kernel = 7
    pooling = "max"

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        n = view.n_tokens
        if view.queries is None or view.budget >= n:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, window, T), causal over the window
        scores = view.group(attn.sum(dim=1), "mean")  # (H_kv, T)
        pool = F.max_pool1d if self.pooling == "max" else F.avg_pool1d
        scores = pool(scores[:, None, :], self.kernel, stride=1, padding=self.kernel // 2)[:, 0, :]
        if view.query_positions is not None:  # the window is always kept
            scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, valid)
