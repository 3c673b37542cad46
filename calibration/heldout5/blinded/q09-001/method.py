"""Query-deduplicated attention for decode-time eviction (board C).

While a model reasons, many consecutive decode queries are near-copies of each other (the same step restated,
the same number carried); summing their attention lets one repeated pattern dominate what is kept. Here each of
the newest 64 queries is weighted by 1 / (how many of those 64 queries of the same head have cosine > 0.9 with
it, itself included) before its attention is summed, so each distinct query "intent" gets one vote. Scores are
carried across calls with half-decay (remember/recall), the 4 first tokens and the newest eighth of the budget
are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DedupQueryAttention(EvictionMethod):
    name = "dedup_query_attention"
    query_window = 64
    similar = 0.9
    carry = 0.5
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        if view.queries is None or int(counts.max()) <= view.budget:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = F.normalize(view.queries.float(), dim=-1)                # (H_q, N, d)
        sim = torch.einsum("hnd,hmd->hnm", q, q)
        weight = 1.0 / (sim > self.similar).float().sum(dim=-1)      # (H_q, N)
        probs = view.attention()                                     # (H_q, N, T)
        fresh = torch.einsum("hn,hnt->ht", weight, probs)
        fresh = view.group(fresh, "mean")
        score = self.carry * view.recall("dedup") + fresh
        view.remember("dedup", score)
        recent = max(1, view.budget // 8)
        ranked = score.clone()
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            ranked[h, max(0, n - recent):n] = float("inf")
            ranked[h, : min(self.sinks, n)] = float("inf")
        return Keep.from_topk(ranked, view.budget, view.valid)
