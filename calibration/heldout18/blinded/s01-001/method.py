"""Rank-consensus retention (board A).

Each query head of a KV group reads the question differently, and averaging their attention probabilities lets the
one head with the sharpest distribution decide. Here every query head turns its summed question attention into rank
percentiles over the context, and a token's score is the mean percentile over the group (a Borda count), with the
mean attention as a small tie-break. The question/closing rows themselves are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _percentiles(x: torch.Tensor) -> torch.Tensor:
    """Rank of each entry along the last axis, scaled to [0, 1]."""
    order = x.argsort(dim=-1)
    ranks = torch.empty_like(order)
    ranks.scatter_(-1, order, torch.arange(x.shape[-1], device=x.device).expand_as(order))
    return ranks.float() / max(1, x.shape[-1] - 1)


class RankConsensus(EvictionMethod):
    name = "rank_consensus"
    query_window = 48
    question_queries = True
    tie_weight = 0.05

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        mass = view.attention(reduce="sum")  # (H_q, T)
        pct = view.group(_percentiles(mass), "mean")
        mean_mass = view.group(mass, "mean")
        mean_mass = mean_mass / mean_mass.amax(dim=-1, keepdim=True).clamp_min(1e-12)
        score = pct + self.tie_weight * mean_mass
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
