"""SAGE-KV port (board B_online, query-agnostic prefill).

A port of SAGE-KV (Wang et al., "LLMs Know What to Drop: Self-Attention Guided KV Cache Eviction for Efficient
Long-Context Inference", arXiv 2503.08879). SAGE-KV compresses once, right after prefill: the attention of the
last token selects, per KV head (the group's query heads together), the top tokens, and the sink tokens and a
recent window are kept beside them; decoding then runs on the static reduced cache.

On board B the question is not in the prefill, so "the last token" is the last token of the context. Settings:
4 sink tokens, a recent window of 1/8 of the budget (at least 8 tokens), selection by the group's maximum of
the last token's attention. The paper's head-level top-k (ranking groups as a whole) is kept as the per-group
max; the paper's block granularity on GPU is not reproduced (token granularity here).
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class SageKV(EvictionMethod):
    name = "sage_kv"
    query_window = 1
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        last = view.attention(view.queries[:, -1:])[:, 0]          # (H_q, T): the last context token
        ok = view.valid_mask()
        last = last.masked_fill(~ok.repeat_interleave(view.model.group_size, 0), 0.0)
        scores = view.group(last, "max")
        recent = max(8, view.budget // 8)
        counts = ok.sum(-1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            scores[h, max(0, c - recent):c] = float("inf")
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
