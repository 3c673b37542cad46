"""VARI: reconstruction-pass importance with a sink guard (board B_offline)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class VARI(EvictionMethod):
    name = "vari"
    reconstruction_queries = True
    query_window = 32  # other boards: the context's own last positions
    n_sink = 4

    def importance(self, view: LayerView) -> torch.Tensor:
        peak = view.attention(view.queries, reduce="max")                  # (H_q, T), non-causal
        g = view.model.group_size
        per_kv = peak.view(view.n_kv_heads, g, -1)
        return 0.5 * (per_kv.amax(dim=1) + per_kv.mean(dim=1))          # blend of the group's max and mean

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.importance(view)
        score[view.positions < self.n_sink] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
