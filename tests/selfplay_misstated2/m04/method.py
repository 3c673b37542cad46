"""Reconstruction attention weighted by value magnitude (board B_offline)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class EchoValue(EvictionMethod):
    name = "echo_value"
    reconstruction_queries = True
    n_sink = 4
    gamma = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries, reduce="max")            # (H_q, T): max over the repeat pass
        scores = view.group(attn, "max")                              # (H_kv, T)
        vnorm = view.values.float().norm(dim=-1)                      # (H_kv, T)
        valid = view.valid_mask()
        mean_v = (vnorm * valid).sum(dim=1, keepdim=True) / valid.sum(dim=1, keepdim=True).clamp_min(1)
        scores = scores * (vnorm / mean_v.clamp_min(1e-6)).pow(self.gamma)
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
