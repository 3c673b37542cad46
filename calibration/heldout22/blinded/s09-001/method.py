"""Relay pickets (board C, decode-time cap).

Two picket layers decide for the layers behind them: one early (the third attention layer) and one near the middle
of the depth, which refreshes the list. A picket ranks its own tokens by the attention the newest rows give them and
posts the positions it keeps; every following layer keeps the posted positions it still holds and fills the rest of
its room with its most recent tokens, until the next picket posts a fresh list. The two layers before the first
picket decide by their own attention.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RelayPickets(EvictionMethod):
    name = "relay_pickets"
    query_window = 16
    first_picket = 2

    def setup(self, model) -> None:
        self._att = list(model.attention_layers)
        self._pickets = {self.first_picket, max(self.first_picket + 1, len(self._att) // 2 - 2)}
        self._posted: torch.Tensor | None = None

    def _order(self, layer: int) -> int:
        return self._att.index(layer) if layer in getattr(self, "_att", []) else layer

    def _is_picket(self, layer: int) -> bool:
        order = self._order(layer)
        return order in getattr(self, "_pickets", {self.first_picket}) or order < self.first_picket

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ok = view.valid_mask()
        if self._is_picket(view.layer) or getattr(self, "_posted", None) is None:
            a = view.group(view.attention(reduce="sum"), "max")
            a = a.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
            keep = Keep.from_topk(a, view.budget, view.valid)
            if self._order(view.layer) >= self.first_picket:
                self._posted = torch.unique(torch.cat([view.positions[h, idx] for h, idx in enumerate(keep.indices)]))
            return keep
        posted = self._posted.to(view.positions.device)
        hit = torch.isin(view.positions, posted) & ok
        s = view.positions.float() / (1.0 + view.positions.max().float())
        s = s + hit.float()
        return Keep.from_topk(s, view.budget, view.valid)
