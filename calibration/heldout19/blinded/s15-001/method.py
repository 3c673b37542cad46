"""Staggered-coverage retention (board B_online, query-agnostic prefill).

Each attention layer keeps a few opening tokens, the closing stretch, and one contiguous band of the middle context;
the band slides from the oldest part of the context at the first layer to the newest at the last, so together the
layers cover the whole context even though each keeps only a slice. Query-free and attention-free.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class StaggeredCoverage(EvictionMethod):
    name = "staggered_coverage"
    openers = 4
    closing_share = 0.25

    def setup(self, model) -> None:
        self._depth = {layer: i for i, layer in enumerate(model.attention_layers)}
        self._n = max(1, len(model.attention_layers))

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_depth"):
            self.setup(view.model)
        valid = view.valid_mask()
        frac = self._depth.get(view.layer, 0) / max(1, self._n - 1)
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            n = idx.numel()
            b = min(view.budget, n)
            if b >= n:
                out.append(idx)
                continue
            opening = min(self.openers, b)
            closing = min(int(b * self.closing_share), b - opening)
            band = b - opening - closing
            middle = n - opening - closing  # slots between the opening and the closing stretch
            start = opening + int(round(frac * max(0, middle - band)))
            chosen = torch.cat([
                torch.arange(0, opening, device=idx.device),
                torch.arange(start, start + band, device=idx.device),
                torch.arange(n - closing, n, device=idx.device),
            ])
            out.append(idx[chosen.unique()])
        return Keep(tuple(out))
