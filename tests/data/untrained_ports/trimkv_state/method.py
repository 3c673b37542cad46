"""Ebb: while decoding, each held token's persistence shrinks by its own factor (read from its key and value) at
every eviction round; the least persistent tokens go first. New tokens start at full persistence."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Ebb(EvictionMethod):
    name = "ebb"
    query_window = 0

    def _factor(self, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(k.norm(dim=-1) / k.shape[-1] ** 0.5 - v.norm(dim=-1) / v.shape[-1] ** 0.5 + 2.0)

    def _carried(self, view: LayerView, fresh: torch.Tensor) -> torch.Tensor:
        before = view.state.get("ebb")
        if before is None:
            return fresh
        old_pos, old_keep = before
        same = view.positions.unsqueeze(-1) == old_pos.unsqueeze(-2)
        got = (same.float() * old_keep.unsqueeze(-2)).sum(dim=-1)
        return torch.where(same.any(dim=-1), got, fresh)

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(self._factor(view.keys.float(), view.values.float()), view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        factor = self._factor(view.keys.float(), view.values.float())
        persist = self._carried(view, torch.ones_like(factor))
        persist = persist * factor
        view.state["ebb"] = (view.positions.clone(), persist)
        return Keep.from_topk(persist, view.budget, view.valid)
