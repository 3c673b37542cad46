"""Query-direction coverage (board B_online).

On board B the window of closing context queries stands in for questions that will only come later (SnapKV's
observation window, Li et al., 2024, arXiv 2404.14469, used here without the question). Summing the window's attention
lets the dominant query direction decide everything: if most window queries look at the same few tokens, the tokens a
minority of queries look at are drowned. We keep every direction in play. The last 64 context queries of each query
head are grouped by cosine k-means into 4 directions (deterministic initialisation at evenly spaced queries); each
direction's mean causal attention is scaled so that its best token scores 1; a token's score is its best score over the
directions, averaged over the KV head's query heads and average-pooled over 3 tokens. The window and the first 4 tokens
(StreamingLLM, Xiao et al., 2023, arXiv 2309.17453) are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def direction_labels(q: torch.Tensor, k: int, rounds: int = 10) -> torch.Tensor:
    """q (N, D) -> label per query, cosine k-means with evenly spaced seeds."""
    n = q.shape[0]
    k = max(1, min(k, n))
    u = F.normalize(q.float(), dim=-1)
    seeds = u[torch.linspace(0, n - 1, k).round().long()]
    lab = torch.zeros(n, dtype=torch.long, device=q.device)
    for _ in range(rounds):
        lab = (u @ seeds.T).argmax(1)
        acc = torch.zeros_like(seeds).index_add_(0, lab, u)
        keep = acc.norm(dim=-1) > 1e-9
        seeds = torch.where(keep[:, None], F.normalize(acc, dim=-1), seeds)
    return lab


class QueryDirectionCoverage(EvictionMethod):
    name = "query_direction_coverage"
    query_window = 64
    directions = 4
    n_sink = 4
    kernel = 3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = view.attention()                                          # (H_q, N, T)
        h_q, n, t = rows.shape
        best = torch.zeros(h_q, t, device=rows.device)
        for head in range(h_q):
            lab = direction_labels(view.queries[head], self.directions)
            for c in lab.unique().tolist():
                mean = rows[head, lab == c].mean(0)
                best[head] = torch.maximum(best[head], mean / mean.max().clamp_min(1e-12))
        score = view.group(best, "mean")
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        fixed = (view.positions < self.n_sink) | (view.positions >= int(view.query_positions.min()))
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
