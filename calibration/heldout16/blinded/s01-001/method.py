"""Rising-attention retention (board C, decode-time).

Decode-time rankings read the newest queries' attention as a level (TOVA: the last query; H2O: accumulated sums).
In a reasoning trace, what matters next is often what the trace has just started to read again: a quantity from the
problem statement being brought back into a derivation. We add the trend. With the newest 16 queries in hand, a
token's recent attention is the mean over the newest 8 and its earlier attention the mean over the 8 before them,
each taken as the maximum over the KV head's query heads. Score = recent + 0.5 x max(0, recent - earlier). The
newest 16 entries and the 4 oldest entries (sinks, as in StreamingLLM) are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RisingAttention(EvictionMethod):
    name = "rising_attention"
    query_window = 16
    half = 8
    lift = 0.5
    newest = 16
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries
        n = q.shape[1]
        cut = max(1, n - self.half)
        recent = view.group(view.attention(q[:, cut:], reduce="mean"), "max")
        earlier = view.group(view.attention(q[:, :cut], reduce="mean"), "max") if cut > 0 else recent
        score = recent + self.lift * (recent - earlier).clamp_min(0)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.newest):c] = float("inf")
            score[h, :min(self.sinks, c)] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
