"""Ripple (board B_offline): a token is worth what its absence would change. For each replay query, dropping a
token takes its share out of the read-out and renormalises the rest; the size of that change has a closed form
in the token's attention, its value and the read-out. A token keeps its place by the total change it would cause."""

import torch

from harness import EvictionMethod, Keep, LayerView


class Ripple(EvictionMethod):
    name = "ripple"
    reconstruction_queries = True
    chunk = 64
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        v = view.values.float()                                          # (H_kv, T, D)
        v_sq = (v * v).sum(-1)                                           # (H_kv, T)
        total = torch.zeros(view.keys.shape[:2], device=v.device)
        for s in range(0, view.queries.shape[1], self.chunk):
            a = view.attention(view.queries[:, s: s + self.chunk])     # (H_q, c, T)
            c = a.shape[1]
            a = a.reshape(view.n_kv_heads, g * c, -1)
            o = a @ v                                                    # (H_kv, gc, D): the read-out
            cross = o @ v.transpose(1, 2)                                # (H_kv, gc, T)
            dist = (v_sq[:, None, :] - 2 * cross + (o * o).sum(-1, keepdim=True)).clamp_min(0).sqrt()
            shift = a / (1.0 - a).clamp_min(1e-4) * dist
            total += shift.sum(1)
        total[:, : self.sinks] = float("inf")
        return Keep.from_topk(total, view.budget, view.valid)
