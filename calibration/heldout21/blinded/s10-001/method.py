"""Trimmed-window scoring (board B_online, query-agnostic prefill).

Builds on query-agnostic SnapKV (Li et al., 2024, arXiv 2404.14469; evaluated without the question in KVzip, arXiv
2505.23416): tokens are ranked by the attention the context's last rows pay them. SnapKV sums over the window rows,
so a single row that spikes on a token can carry it; DefensiveKV (Feng et al., 2025, arXiv 2510.13334) goes the
other way and takes a worst-case-aware maximum. Here each token's score is a trimmed mean over the 64 window rows: per
token and query head, the largest 10 % of its row weights are dropped before averaging, so only attention that several
rows agree on counts. Scores are averaged over the group's query heads and avg-pooled (width 5); the window and the
first 4 tokens are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TrimmedWindow(EvictionMethod):
    name = "trimmed_window"
    query_window = 64
    trim = 0.10
    kernel = 5
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()                                      # (H_q, W, T)
        w = att.shape[1]
        drop = max(1, int(round(w * self.trim)))
        srt = att.sort(dim=1).values                                # ascending over rows
        trimmed = srt[:, : w - drop].mean(1)                        # (H_q, T)
        score = view.group(trimmed, "mean")
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
