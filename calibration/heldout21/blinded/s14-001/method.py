"""Reach-split caching (board B_online, query-agnostic prefill).

Heads come in two temperaments. Short-reach heads attend to the opening tokens and their own neighbourhood and need
nothing else; long-reach heads fetch content from anywhere in the context. Reach-split caching measures each KV
head's reach from its last 40 rows (the share of their attention that lands outside the opening tokens and the local
band), gives long-reach heads a larger share of the layer's slots, and lets short-reach heads keep only their opening
tokens and newest stretch. Long-reach heads rank the context by the summed attention of those rows.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ReachSplit(EvictionMethod):
    name = "reach_split"
    query_window = 40
    opening = 4
    band = 64             # local band behind the window
    far_share = 0.25      # a head whose far share exceeds this is long-reach
    tilt = 1.6            # long-reach heads get this multiple of the mean budget (capped by what is freed)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv = view.n_kv_heads
        att = view.group(view.attention(reduce="sum"), "sum")                   # (H_kv, T)
        lo = view.query_positions.min()
        near = (view.positions >= lo - self.band) | (view.positions < self.opening)
        far = (att * ~near).sum(1) / att.sum(1).clamp_min(1e-9)                 # (H_kv,)
        long_reach = far > self.far_share
        total = view.budget * h_kv
        n_long = int(long_reach.sum())
        if 0 < n_long < h_kv:
            per_long = max(0, min(int(view.budget * self.tilt), view.n_tokens,
                                  (total - (h_kv - n_long) * (self.opening + 8)) // n_long))
            per_short = (total - per_long * n_long) // (h_kv - n_long)
            k = torch.where(long_reach, torch.tensor(per_long), torch.tensor(per_short))
        else:
            k = torch.full((h_kv,), view.budget)
        rec = view.positions.float()
        edge = rec.clone()
        edge[:, : self.opening] = float("inf")
        s = att.clone()
        s = s.masked_fill(view.positions >= lo, float("inf"))
        s[:, : self.opening] = float("inf")
        s = torch.where(long_reach[:, None], s, edge)
        return Keep.from_topk(s, k.to(torch.long), view.valid)
