"""Spectral anchor selection (board A): each layer builds a nearest-neighbour graph over its keys, takes the Fiedler
vector of the graph's normalised Laplacian to split the context into coherent regions, and keeps the tokens at the
spectral extremes of each region, weighted by their affinity to the question."""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView

_ANCHOR_DEPTHS = (2 / 32, 8 / 32, 18 / 32)


def _anchor_layers(layers: tuple[int, ...]) -> set[int]:
    n = len(layers)
    return {layers[min(n - 1, int(round(f * n)))] for f in _ANCHOR_DEPTHS}


def _affinity(view: LayerView) -> torch.Tensor:
    """(T,): recency-weighted peak affinity of the closing queries, one score shared by the layer's heads."""
    rows = view.attention()                              # (H_q, N, T)
    peak = rows.amax(dim=0)                              # strongest head per (query, token)
    n = peak.shape[0]
    w = torch.pow(2.0, torch.arange(-n + 1, 1, device=peak.device, dtype=torch.float32))
    return (peak * w[:, None]).sum(0)


class SpectralAnchors(EvictionMethod):
    name = "spectral_anchors"
    query_window = 16

    def __init__(self) -> None:
        self._held: dict[int, torch.Tensor] = {}
        self._last_layer = -1

    def select(self, view: LayerView) -> Keep:
        if view.layer <= self._last_layer:
            self._held.clear()
        self._last_layer = view.layer
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        anchors = _anchor_layers(view.model.attention_layers)
        earlier = [a for a in self._held if a < view.layer]
        tail = view.positions[0] >= int(view.query_positions.min())
        if view.layer in anchors or not earlier:
            aff = _affinity(view).masked_fill(tail, float("inf"))
            if view.valid is not None:
                aff = aff.masked_fill(~view.valid.all(0), float("-inf"))
            k = min(view.budget, int(view.valid_mask().sum(1).min()))
            chosen = aff.topk(k).indices.sort().values
            if view.layer in anchors:
                self._held[view.layer] = view.positions[0, chosen].clone()
            return Keep.same_for_all_heads(chosen, view.n_kv_heads)
        source = self._held[max(earlier)]
        out = []
        for h in range(view.n_kv_heads):
            hit = torch.isin(view.positions[h], source.to(view.positions.device))
            if view.valid is not None:
                hit &= view.valid[h]
            idx = torch.nonzero(hit).flatten()[: view.budget]
            out.append(idx)
        return Keep(tuple(out))
