"""Staircase (board C): a capped layer keeps its sinks, its newest half, and one unbroken stretch of older text;
where that stretch sits depends on the layer's depth, so the layers of the stack hold different stretches of the
past and between them cover far more of it than any one layer could."""

from harness import EvictionMethod, Keep, LayerView

import torch


class Staircase(EvictionMethod):
    name = "staircase"
    sinks = 4
    newest_share = 0.5

    def setup(self, model) -> None:
        self._depths = {layer: i for i, layer in enumerate(model.attention_layers)}
        self._n = max(1, len(model.attention_layers))

    def _step(self, layer: int) -> float:
        depths = getattr(self, "_depths", {})
        n = getattr(self, "_n", 1)
        return depths.get(layer, 0) / max(1, n - 1)

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        counts = view.valid_mask().sum(1)
        picks = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            if b >= n:
                picks.append(torch.arange(n))
                continue
            s = min(self.sinks, b)
            r = min(int(b * self.newest_share), b - s)
            m = b - s - r
            middle = n - r - s                      # the older stretch between the sinks and the newest tokens
            start = s + int(round(self._step(view.layer) * max(0, middle - m)))
            idx = torch.cat([torch.arange(s), torch.arange(start, start + m), torch.arange(n - r, n)])
            picks.append(idx.unique())
        return Keep(tuple(p.to(torch.int64) for p in picks))
