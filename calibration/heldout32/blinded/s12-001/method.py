"""Idle Floors (board B_online): some layers only look at the first tokens and their own neighbourhood; those
keep sinks and a recent window, and the others keep what the context's closing rows read."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class IdleFloors(EvictionMethod):
    name = "idle_floors"
    query_window = 32
    sinks = 4

    def setup(self, model) -> None:
        self._layers = tuple(model.attention_layers)

    def _idle(self, view: LayerView) -> bool:
        layers = getattr(self, "_layers", None) or tuple(range(view.model.n_layers))
        depth = layers.index(view.layer) if view.layer in layers else view.layer
        third = len(layers) // 3
        return third <= depth < 2 * third and depth % 2 == 1

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None or self._idle(view):
            score = view.positions.float().clone()
            score[:, : self.sinks] = float("inf")
            return Keep.from_topk(score, view.budget, view.valid)
        score = view.group(view.attention(reduce="sum"), "mean")
        score = F.max_pool1d(score[:, None], 7, stride=1, padding=3)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
