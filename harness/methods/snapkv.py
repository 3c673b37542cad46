"""SnapKV (Li et al., 2024, arXiv 2404.14469): score prefix tokens by the attention the last ``window``
queries pay them, summed over the window, smoothed by 1-D pooling, averaged over each KV head's query heads;
keep the top (budget - window) plus the window itself. Defaults are the paper's LongBench configs
(window 32, kernel 7, max-pool) rather than kvpress's (64, 5, avg-pool)."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class SnapKV(EvictionMethod):
    name = "snapkv"
    query_window = 32
    kernel = 7
    pooling = "max"

    def scores(self, view: LayerView) -> torch.Tensor:
        """(H_kv, T): pooled window attention; the window itself scores +inf (always kept)."""
        if view.queries is None:
            return view.positions.float()  # nothing to score with: recency
        assert view.query_positions is not None  # handed over together with the queries
        attn = view.attention()  # (H_q, window, T), causal over the window
        scores = view.group(attn.sum(dim=1), "mean")
        pool = F.max_pool1d if self.pooling == "max" else F.avg_pool1d
        scores = pool(scores[:, None, :], self.kernel, stride=1, padding=self.kernel // 2)[:, 0, :]
        return scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(self.scores(view), view.budget, view.valid)


class QueryAgnosticSnapKV(SnapKV):
    """SnapKV without the question (as evaluated in KVzip, arXiv 2505.23416): on board B the window holds the
    last context positions, so the scores say what the context's end attends to, not the question."""

    name = "snapkv_qa"
