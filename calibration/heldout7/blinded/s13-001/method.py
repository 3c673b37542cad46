"""Drift-adaptive observation window (board C).

Decode-time eviction that scores the cache by the attention of the newest queries (as TOVA, arXiv 2401.06104, does
with one query and SnapKV, arXiv 2404.14469, with a fixed window). How many recent queries to trust should depend
on how fast the reasoning moves: while the trace stays on one sub-problem the recent queries agree and a long window
averages out noise; right after a shift, old queries describe a finished step. At each eviction we measure the
drift as the cosine between the mean of the newest 8 queries and the mean of the queries before them (per query
head, averaged), and map it linearly to a window of 8 (cosine <= 0.5) to 64 (cosine >= 0.9) queries. The score is
the mean causal attention of that window, averaged over the KV head's query heads; the first 4 tokens (sinks, as in
StreamingLLM, arXiv 2309.17453) and the newest 8 tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DriftAdaptiveWindow(EvictionMethod):
    name = "drift_adaptive_window"
    query_window = 64
    short = 8
    long = 64
    low_cos = 0.5
    high_cos = 0.9
    n_sink = 4
    n_recent = 8

    def window_length(self, q: torch.Tensor) -> int:
        n = q.shape[1]
        if n <= self.short:
            return n
        newest = q[:, -self.short:].float().mean(dim=1)
        before = q[:, : n - self.short].float().mean(dim=1)
        cos = float(torch.nn.functional.cosine_similarity(newest, before, dim=-1).mean())
        frac = min(1.0, max(0.0, (cos - self.low_cos) / (self.high_cos - self.low_cos)))
        return min(n, int(round(self.short + frac * (self.long - self.short))))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        w = self.window_length(view.queries)
        attn = view.attention()[:, -w:]                                       # (H_q, w, T), causal
        score = view.group(attn.mean(dim=1), "mean")
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, : min(self.n_sink, n)] = float("inf")
            score[h, max(0, n - self.n_recent): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
