"""Staircase Spans: every layer keeps one contiguous stretch of the past, and the stretches climb with depth.

No scores at all. Each layer holds the opening entries, the newest entries and one contiguous stretch of the
middle; the stretch's offset moves with the layer's depth, the shallowest layer holding the oldest part of the
middle and the deepest the part just before the newest entries, so that the stack as a whole still sees the
whole span. Each eviction repeats the placement on what the layer holds, so older material keeps thinning out
layer by layer as generation runs on.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class StaircaseSpans(EvictionMethod):
    name = "staircase_spans"
    n_open = 4
    newest_share = 0.25

    def setup(self, model) -> None:
        self._ladder = {layer: i for i, layer in enumerate(model.attention_layers)}

    def select(self, view: LayerView) -> Keep:
        ladder = getattr(self, "_ladder", None) or {i: i for i in range(view.model.n_layers)}
        step = ladder.get(view.layer, 0)
        height = max(1, len(ladder) - 1)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            n, b = idx.numel(), min(view.budget, idx.numel())
            if b >= n:
                out.append(idx)
                continue
            n_open = min(self.n_open, b)
            n_new = min(b - n_open, max(1, int(round(b * self.newest_share))))
            span = b - n_open - n_new
            middle = idx[n_open: n - n_new]
            offset = int(round((middle.numel() - span) * step / height)) if span > 0 else 0
            parts = [idx[:n_open], middle[offset: offset + span], idx[n - n_new:]]
            out.append(torch.cat(parts))
        return Keep(tuple(out))
