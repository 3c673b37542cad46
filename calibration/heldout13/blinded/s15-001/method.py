"""ALISA's Sparse Window Attention as decode-time eviction (board C): a training-free port.

Port of the token-selection part of ALISA (Zhao, Wu, Wang; "ALISA: Accelerating Large Language Model Inference
via Sparsity-Aware KV Caching", ISCA 2024, arXiv 2403.17312). ALISA's Sparse Window Attention keeps two kinds of
tokens: locally static ones (the most recent tokens) and globally dynamic ones (the tokens with the largest sum
of attention weights paid by the queries of the recent local window).

What is ported: that rule, applied whenever a layer of the capped cache gives back a block.
Deviations (ours): half of the kept budget is the recent part (a fixed split; ALISA sets the ratio per workload);
the local window is the newest 32 queries, their causal attention summed and summed over the KV head's query
heads; four opening tokens are also kept (StreamingLLM's sinks, not in ALISA). ALISA's system side (dynamic
scheduling between caching and recomputation, KV quantisation) is not ported: the harness owns the cache.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class AlisaSWA(EvictionMethod):
    name = "alisa_swa"
    query_window = 32
    local_share = 0.5
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None:
            score = view.positions.float()
        else:
            score = view.group(view.attention(reduce="sum"), "sum")
        valid = view.valid_mask()
        local = int(view.budget * self.local_share)
        counts = valid.sum(dim=1)
        score = score.clone()
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - local):n] = float("inf")
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
