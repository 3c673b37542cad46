"""Depth-Tapered Question Attention: question-span attention with sinks and a recent tail."""

import torch

from harness import EvictionMethod, Keep, LayerView


class DepthTaper(EvictionMethod):
    name = "depth_taper"
    query_window = 16
    question_queries = True
    n_sink = 4
    tail = 16

    def setup(self, model) -> None:
        self.n_attn = len(model.attention_layers)

    def select(self, view: LayerView) -> Keep:
        if view.queries is not None:
            s = view.attention(reduce="sum")                  # (H_q, T)
            s = view.group(s, "sum")
        else:
            s = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        s = s.masked_fill(view.positions < self.n_sink, float("inf"))
        n_real = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(n_real[h])
            s[h, max(0, n - self.tail):n] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
