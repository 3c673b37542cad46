"""Drift-filtered retention for long generations (board C)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class DriftFiltered(EvictionMethod):
    name = "drift_filtered"
    query_window = 32
    sinks = 4
    recent_share = 0.5
    process_noise = 0.1

    def setup(self, model):
        self._order = {layer: i for i, layer in enumerate(model.attention_layers)}

    def _posterior(self, view: LayerView) -> None:
        """Attention observed by the newest queries, folded into a running estimate per token."""
        if view.queries is None:
            return
        obs = view.group(view.attention(reduce="mean"), "mean")
        prior = view.recall("drift_mean")
        var = view.recall("drift_var", fill=1.0) + self.process_noise
        gain = var / (var + 1.0)
        view.remember("drift_mean", prior + gain * (obs - prior))
        view.remember("drift_var", (1 - gain) * var)

    def _rung(self, layer: int, model) -> float:
        if not hasattr(self, "_order"):
            self.setup(model)
        n = max(1, len(self._order) - 1)
        return self._order.get(layer, 0) / n

    def select(self, view: LayerView) -> Keep:
        self._posterior(view)
        valid = view.valid_mask()
        rung = self._rung(view.layer, view.model)
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            n = idx.numel()
            b = view.budget
            if b >= n:
                out.append(idx)
                continue
            head = min(self.sinks, b)
            tail = min(int(b * self.recent_share), b - head)
            span = b - head - tail
            middle = n - head - tail
            start = head + int(round(rung * max(0, middle - span)))
            keep = torch.cat([idx[:head], idx[start:start + span], idx[n - tail:] if tail else idx[:0]])
            out.append(keep.unique())
        return Keep(tuple(out))
