"""Depth-drift retention (board B_online): a token whose key and value change direction sharply from one
attention layer to the next is being rewritten by the network at that depth; such tokens are kept, tokens that
merely carry the previous layer's state forward are the ones to drop."""

import math

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


def _angle(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Angle between matching rows of two (..., D) tensors, scaled to [0, 1]."""
    cos = torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=-1, eps=1e-8)
    return torch.arccos(cos.clamp(-1.0, 1.0)) / math.pi


class DepthDriftRetention(EvictionMethod):
    name = "depth_drift_retention"
    n_sink = 4
    n_recent = 16

    def setup(self, model: ModelInfo) -> None:
        self._order = list(model.attention_layers)
        self._below = None

    def _previous_layer(self, layer: int) -> int | None:
        order = getattr(self, "_order", None) or []
        if layer in order:
            i = order.index(layer)
            return order[i - 1] if i > 0 else None
        return layer - 1 if layer > 0 else None

    def _drift(self, view: LayerView) -> torch.Tensor | None:
        below = getattr(self, "_below", None)
        want = self._previous_layer(view.layer)
        if below is None or want is None or below["layer"] != want:
            return None
        if below["keys"].shape != view.keys.shape or not torch.equal(below["positions"], view.positions):
            return None
        return _angle(view.keys, below["keys"]) + _angle(view.values, below["values"])

    def select(self, view: LayerView) -> Keep:
        drift = self._drift(view)
        self._below = {"layer": view.layer, "positions": view.positions.clone(), "keys": view.keys.clone(),
                       "values": view.values.clone()}
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = drift if drift is not None else view.values.float().norm(dim=-1)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        score = score.clone()
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, : min(self.n_sink, n)] = float("inf")
            score[h, max(0, n - self.n_recent): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
