"""Perplexity-shared head budgets over question attention."""

import torch

from harness import EvictionMethod, Keep, LayerView


class PerplexityShare(EvictionMethod):
    name = "perplexity_share"
    question_queries = True
    floor_frac = 0.25
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h = view.n_kv_heads
        counts = valid.sum(dim=1)
        total = min(view.budget * h, int(counts.sum()))

        attn = view.attention(reduce="mean")                      # (H_q, T) mean over the question queries
        scores = view.group(attn, "mean").masked_fill(~valid, 0.0)  # (H_kv, T)
        p = scores / scores.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        entropy = -(p * torch.log(p.clamp_min(1e-12))).sum(dim=-1)  # nats, per KV head
        width = entropy.exp()                                        # effective number of attended tokens

        floor = min(int(self.floor_frac * view.budget), total // h)
        rest = max(0, total - floor * h)
        share = floor + torch.floor(rest * width / width.sum().clamp_min(1e-12)).long()
        k = torch.minimum(share, counts)

        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, k, view.valid)
