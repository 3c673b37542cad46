"""GemFilter-style eviction: a port of GemFilter (Shi et al., 2024, "Discovering the Gems in Early Layers:
Accelerating Long-Context LLMs with 1000x Input Token Reduction", arXiv 2409.17422) to the harness, training-free.

This is a port, not a new method. GemFilter runs the first layers, takes the attention of the prompt's last
query at one early "filter" layer, keeps the top tokens, and re-runs the full model on those tokens only. Here
the re-run is replaced by eviction: the filter layer's selection is applied, by position, to every deeper layer.

Deviations from the paper (also in DESCRIPTION.md):
- no second forward pass: the selected tokens keep their original keys/values and positions in every layer;
- layers before the filter layer are not left full (the budget is per layer): each keeps the top tokens of its
  own last-query attention;
- the filter layer is a third of the way down (layer 10 of SmolLM2's 30), where the paper picks it per model;
- the last query's attention is summed over the query heads of each KV head, then summed over KV heads, so
  every head keeps the same tokens, as in the paper (one index set for the whole model).
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class GemFilterPort(EvictionMethod):
    name = "gemfilter_port"
    query_window = 1          # the prompt's last query (the end of the question on board A)
    filter_depth = 1 / 3

    def setup(self, model) -> None:
        layers = list(model.attention_layers)
        self.filter_layer = layers[int(len(layers) * self.filter_depth)]
        self.chosen: dict[tuple[int, int], torch.Tensor] = {}

    def _last_query_scores(self, view: LayerView) -> torch.Tensor:
        att = view.attention()[:, -1]                   # (H_q, T)
        return view.group(att, "sum").sum(0)            # one score per position, shared by all heads

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "filter_layer"):
            self.setup(view.model)
        key = (view.n_tokens, view.budget)
        if view.layer < self.filter_layer or (view.layer > self.filter_layer and key not in self.chosen):
            # before the filter layer (or deeper without a filter decision): the layer's own last query
            shared = self._last_query_scores(view)
            return Keep.from_topk(shared.expand(view.n_kv_heads, -1), view.budget, view.valid)
        if view.layer == self.filter_layer:
            shared = self._last_query_scores(view)
            keep = shared.topk(view.budget).indices
            self.chosen[key] = view.positions[0, keep].sort().values
        wanted = self.chosen[key]
        out = []
        for h in range(view.n_kv_heads):
            hit = torch.isin(view.positions[h], wanted.to(view.positions.device))
            out.append(hit.nonzero().flatten()[: view.budget])
        return Keep(tuple(out))
