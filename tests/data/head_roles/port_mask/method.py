"""Reach-aware layout: each KV head is classed once per call by how far its readers look."""

import torch

from harness import EvictionMethod, Keep, LayerView


class ReachLayout(EvictionMethod):
    name = "reach_layout"
    query_window = 32
    opening = 4
    far_share = 0.25

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        w = view.group(view.attention().sum(1), "mean")  # (H_kv, T)
        pos = view.positions
        local = (pos < self.opening) | (pos >= t - (b - self.opening))
        reach = (w * (~local).float()).sum(-1) / w.sum(-1).clamp_min(1e-9)
        n_far = max(1, int(self.far_share * w.shape[0]))
        far = torch.zeros(w.shape[0], dtype=torch.bool)
        far[reach.topk(n_far).indices] = True
        smooth = torch.nn.functional.avg_pool1d(w[:, None], 7, stride=1, padding=3)[:, 0]
        smooth = smooth.masked_fill(pos >= t - 16, float("inf"))
        layout = torch.where(far[:, None], smooth, local.float().expand_as(w) + pos.float() * 1e-9)
        return Keep.from_topk(layout, b, view.valid)
