"""Spread Split: the share of the budget given to the recent window follows how spread out the newest
queries' attention is.

Builds on TOVA (rank by the newest queries' attention, arXiv 2401.06104), StreamingLLM (sinks + recent window,
arXiv 2309.17453) and H2O (heavy hitters beside a recent window, arXiv 2306.14048); CAKE (arXiv 2503.12491)
uses attention entropy to size whole layers' budgets. New here: at every eviction round the normalised entropy
of the newest queries' attention decides, per layer, how the budget is split between the recent window and the
attention-ranked older tokens: diffuse attention -> a longer window, focused attention -> more heavy hitters.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class SpreadSplit(EvictionMethod):
    name = "spread_split"
    query_window = 16
    sinks = 4
    low, high = 0.2, 0.7        # recent share at zero and at full entropy

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.attention()                                      # (H_q, N, T)
        ent = -(attn.clamp_min(1e-12).log() * attn).sum(dim=-1)       # (H_q, N)
        seen = (attn > 0).sum(dim=-1).clamp_min(2).float()
        spread = float((ent / seen.log()).mean().clamp(0.0, 1.0))
        share = self.low + (self.high - self.low) * spread
        score = view.group(attn.mean(dim=1), "max").masked_fill(~valid, float("-inf"))
        window = int(view.budget * share)
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : min(self.sinks, c)] = float("inf")
            score[h, max(0, c - window): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
