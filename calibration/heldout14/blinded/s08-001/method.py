"""Anchor-layer consensus (board A).

Attention in the first couple of layers is still diffuse and local; by the third layer the prompt has decided
which context tokens it cares about, and that decision is remarkably stable through the rest of the network.
We therefore read the ranking once, at an anchor layer, and let every deeper layer keep exactly that token set,
so all layers agree on one retained context (and the cache stays aligned across depth). The ranking is the
average attention a token receives from every query head and from a long tail of prompt rows (the question plus
the last 1,024 prompt positions), which rewards tokens the whole prompt relies on. Layers before the anchor rank
themselves with the same statistic.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class AnchorConsensus(EvictionMethod):
    name = "anchor_consensus"
    query_window = 1024
    question_queries = True
    anchor_depth = 2
    anchor_min = 64  # a shared set needs room for the closing span
    _layers: list = []
    _shared = None

    def setup(self, model):
        self._layers = list(model.attention_layers)
        self._shared = None

    def _received(self, view: LayerView) -> torch.Tensor:
        mean_rows = view.attention(reduce="mean")  # (H_q, T)
        return mean_rows.mean(0, keepdim=True).expand(view.n_kv_heads, -1)  # all heads pooled

    def _tail(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.positions.float(), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return self._tail(view)
        if view.budget < self.anchor_min:
            return self._tail(view)
        layers = getattr(self, "_layers", None) or [view.layer]
        depth = layers.index(view.layer) if view.layer in layers else 0
        closing = view.positions >= int(view.query_positions.max()) - 15
        if depth > self.anchor_depth and self._shared is not None:
            pos, rank = self._shared
            if torch.equal(pos, view.positions[0]) and view.valid is None:
                score = rank.expand(view.n_kv_heads, -1)
                return Keep.from_topk(score.masked_fill(closing, float("inf")), view.budget, view.valid)
        score = self._received(view)
        if depth == self.anchor_depth:
            self._shared = (view.positions[0].clone(), score[:1].clone())
        return Keep.from_topk(score.masked_fill(closing, float("inf")), view.budget, view.valid)
