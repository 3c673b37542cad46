"""Even Keel: decode-time eviction by attention read at a length-steadied temperature, weighted by value strength.

A softmax over n keys flattens as n grows, so a plain running total of attention favours whatever was scored while the
cache was short. Each newest query's logits are sharpened by ln(n) / ln(n_ref) (n = keys it can see) before its
softmax, which keeps its spread steady along the trace; the steadied weights are added up and scaled by the square
root of each entry's value norm relative to the layer's mean value norm. The level is a keel, not a snapshot: what an
entry earned at earlier evictions stays with it (carried by position, decayed by ``carry`` per eviction) and the new
queries' weights are added on top. The first 4 and newest 16 entries stay.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class EvenKeel(EvictionMethod):
    name = "even_keel"
    query_window = 48
    n_ref = 64
    n_sink = 4
    n_recent = 16
    carry = 0.9

    def _steadied(self, view: LayerView) -> torch.Tensor:
        h_kv, t, g = view.n_kv_heads, view.n_tokens, view.model.group_size
        q = view.queries.float()
        n = q.shape[1]
        qpos = view.query_positions
        blind = view.positions.view(h_kv, 1, t) > qpos.view(1, n, 1)                  # (H_kv, N, T)
        if view.valid is not None:
            blind = blind | ~view.valid.view(h_kv, 1, t)
        visible = (~blind).sum(dim=-1).clamp_min(2).float()                          # (H_kv, N)
        lam = (visible.log() / math.log(self.n_ref)).clamp_min(1.0)
        logits = torch.baddbmm(torch.zeros(h_kv, g * n, t), q.reshape(h_kv, g * n, -1),
                               view.keys.float().transpose(1, 2), beta=0.0, alpha=view.model.scale)
        logits = logits.view(h_kv, g, n, t) * lam.view(h_kv, 1, n, 1)
        logits = logits.masked_fill(blind.view(h_kv, 1, n, t), float("-inf"))
        weights = logits.softmax(dim=-1).nan_to_num(0.0)
        return weights.sum(dim=2).mean(dim=1)                                         # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        level = self._steadied(view)
        strength = view.values.float().pow(2).sum(-1).sqrt()
        mean_strength = (strength * valid).sum(dim=1, keepdim=True) / valid.sum(dim=1, keepdim=True).clamp_min(1)
        level = level * (strength / mean_strength.clamp_min(1e-6)).sqrt()
        level = level.masked_fill(view.positions < self.n_sink, float("inf"))
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            level[h, max(0, c - self.n_recent): c] = float("inf")
        return Keep.from_topk(level, view.budget, view.valid)
