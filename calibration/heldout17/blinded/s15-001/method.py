"""Coverage floor (board A, question-aware prefill).

Question-attention eviction (SnapKV, Li et al., 2024, arXiv 2404.14469) can spend the whole budget on one region the
question's wording points at, and a multi-hop or multi-needle question then loses the other regions entirely. We
reserve a floor: the context before the question is cut into 16 equal buckets, and 20 % of the free budget is spread
evenly over them (each bucket keeps its own best tokens by question attention, at most what it holds). The other
80 % goes to the best remaining tokens anywhere. Scores: attention of the question span and the closing 8 rows
(causal), summed over rows, mean over the KV head's query heads. The question span and the 4 opening tokens
(StreamingLLM's sinks) are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class CoverageFloor(EvictionMethod):
    name = "coverage_floor"
    question_queries = True
    query_window = 8
    buckets = 16
    floor_share = 0.2
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(view.attention(reduce="sum").float(), "mean")  # (H_kv, T)
        start_q = int(view.query_positions.min())
        fixed = (view.positions < self.sinks) | (view.positions >= start_q)
        real = view.valid_mask()
        free = (view.budget - (fixed & real).sum(dim=-1)).clamp_min(0)  # (H_kv,)
        # bucket id per context token; the fixed tokens get bucket -1
        span = max(1, start_q - self.sinks)
        bucket = ((view.positions - self.sinks).clamp_min(0) * self.buckets // span).clamp_max(self.buckets - 1)
        bucket = bucket.masked_fill(fixed | ~real, -1)
        # rank of each token inside its bucket (0 = best): sort by (bucket, -score)
        key = bucket.float() * 4.0 - score / score.amax(dim=-1, keepdim=True).clamp_min(1e-9)
        order = key.argsort(dim=-1)
        sorted_bucket = bucket.gather(-1, order)
        first = torch.ones_like(sorted_bucket, dtype=torch.bool)
        first[:, 1:] = sorted_bucket[:, 1:] != sorted_bucket[:, :-1]
        start_idx = torch.arange(order.shape[-1], device=order.device).expand_as(order)
        run_start = torch.where(first, start_idx, torch.zeros_like(start_idx)).cummax(dim=-1).values
        rank_sorted = start_idx - run_start
        rank = torch.empty_like(rank_sorted).scatter_(-1, order, rank_sorted)
        per_bucket = (free.float() * self.floor_share / self.buckets).floor().long()[:, None]
        floor_pick = (bucket >= 0) & (rank < per_bucket)
        boosted = score.clone()
        boosted = torch.where(floor_pick, boosted + 1e6, boosted)
        return Keep.from_topk(boosted.masked_fill(fixed, float("inf")), view.budget, view.valid)
