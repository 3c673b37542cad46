"""Rank Memory: decode-time eviction that remembers how a token *ranked*, not how much attention it got.

At every cap the newest queries (at least one block of them) score the cached tokens by attention (max over a KV
head's query heads, summed over the queries); each token's score this round is its percentile rank among the
tokens of its head. A token's memory is an exponential moving average of those percentiles, carried across calls
by position (new tokens start at the middle). Four sink tokens and the newest eight are always kept; the rest of
the budget goes to the highest memories. Builds on H2O (accumulated attention), A2SF (forgetting factor) and
StreamingLLM (sinks + recent window); averaging ranks instead of attention mass is the change.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RankMemory(EvictionMethod):
    name = "rank_memory"
    query_window = 64
    alpha = 0.5        # weight of the newest round in the moving average
    sinks = 4
    recent = 8

    def _round_ranks(self, view: LayerView) -> torch.Tensor:
        valid = view.valid_mask()
        if view.queries is None:
            return view.positions.float() / max(1, int(view.positions.max()) + 1)
        attn = view.group(view.attention(reduce="sum"), "max")  # (H_kv, T)
        attn = attn.masked_fill(~valid, float("-inf"))
        order = attn.argsort(dim=1)
        ranks = torch.empty_like(attn)
        ar = torch.arange(attn.shape[1], device=attn.device, dtype=attn.dtype)
        ranks.scatter_(1, order, ar.expand_as(attn).contiguous())
        n_pad = (~valid).sum(dim=1, keepdim=True).to(attn.dtype)
        n_real = valid.sum(dim=1, keepdim=True).clamp_min(1).to(attn.dtype)
        return ((ranks - n_pad) / (n_real - 1).clamp_min(1)).clamp(0, 1)

    def select(self, view: LayerView) -> Keep:
        fresh = self._round_ranks(view)
        old = view.recall("rank_mem", fill=-1.0)
        memory = torch.where(old < 0, 0.5 * (1 - self.alpha) + self.alpha * fresh,
                             (1 - self.alpha) * old + self.alpha * fresh)
        view.remember("rank_mem", memory)
        scores = memory.clone()
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, : min(self.sinks, n)] = float("inf")
            scores[h, max(0, n - self.recent): n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
