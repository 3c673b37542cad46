"""Hysteresis on recent-query attention (board C, decode-time).

At each eviction the newest 4 queries' attention ranks the cache (TOVA-style, per KV head). Rankings from one
block to the next flicker, and a token evicted on a flicker is gone for good. So a token that sat in the upper
half of the previous call's ranking gets a margin: it only loses its slot to a token that beats it by more
than that margin in percentile. Sinks and the newest tokens are kept as in H2O / StreamingLLM.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class HysteresisAttention(EvictionMethod):
    name = "hysteresis_attention"
    query_window = 4
    margin = 0.15
    safe_zone = 0.5
    sinks = 4
    newest = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="mean"), "mean")  # (H_kv, T)
        attn = attn.masked_fill(~valid, float("-inf"))
        rank = attn.argsort(dim=1).argsort(dim=1).float()
        n_pad = (~valid).sum(dim=1, keepdim=True)
        n_real = valid.sum(dim=1, keepdim=True).clamp_min(2)
        pct = ((rank - n_pad) / (n_real - 1)).clamp(0, 1)
        previous = view.recall("pct", fill=0.0)
        view.remember("pct", pct)
        score = pct + self.margin * (previous > self.safe_zone).float()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : min(self.sinks, c)] = float("inf")
            score[h, max(0, c - self.newest): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
