"""Dispersion-KV: observation-window attention, average-pooled, top-k per head."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DispersionKV(EvictionMethod):
    name = "dispersion_kv"
    query_window = 32
    kernel = 5

    def head_scores(self, view: LayerView) -> torch.Tensor:
        attn = view.attention()                              # (H_q, W, T)
        s = view.group(attn.sum(dim=1), "mean")              # (H_kv, T)
        s = F.avg_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        return s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = self.head_scores(view)
        per_head = torch.full((view.n_kv_heads,), view.budget, dtype=torch.long)
        return Keep.from_topk(scores, per_head, view.valid)
