"""TidalDecode (Yang et al., 2024, arXiv 2410.05076), ported to one-shot eviction on board A.

TidalDecode's position-persistent sparse attention: a token-selection layer picks one set of token positions
from its full attention (summed over the heads), and the following layers reuse exactly those positions until a
re-selection layer (layer 13 of Llama's 32, i.e. about 40 % of the depth) picks again. Here the selection is an
eviction, made once after prefill with the attention of the final prompt query (the query that produces the
first answer token, as TidalDecode's current query). The layers before the first selection layer (TidalDecode
keeps them dense) cannot keep everything under the budget, so they select with their own final-query
attention. The question span is always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TidalDecodeEviction(EvictionMethod):
    name = "tidaldecode_eviction"
    question_queries = True
    query_window = 1
    first_selection_layer = 2
    reselection_fraction = 13 / 32

    def setup(self, model):
        layers = list(model.attention_layers)
        self._select_at = {layers[min(self.first_selection_layer, len(layers) - 1)],
                           layers[int(round(self.reselection_fraction * (len(layers) - 1)))]}
        self._first = layers[min(self.first_selection_layer, len(layers) - 1)]
        self._chosen = None  # (n_tokens, budget, positions)

    def _own(self, view: LayerView) -> torch.Tensor:
        last = view.queries[:, -1:]                                    # the final prompt query
        attn = view.attention(last, reduce="sum")                      # (H_q, T)
        score = attn.sum(dim=0, keepdim=True).expand(view.n_kv_heads, -1).clone()  # one set for all heads
        return score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "_select_at"):
            self.setup(view.model)
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        key = (view.n_tokens, view.budget)
        if view.layer in self._select_at or view.layer < self._first or self._chosen is None \
                or self._chosen[0] != key:
            score = self._own(view)
            keep = Keep.from_topk(score, view.budget, view.valid)
            if view.layer in self._select_at:
                self._chosen = (key, view.positions[0, keep.indices[0]].clone())
            return keep
        # reuse the selection layer's positions
        pos = self._chosen[1]
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.searchsorted(view.positions[h].contiguous(), pos).clamp(max=view.n_tokens - 1)
            idx = idx[view.positions[h, idx] == pos]
            out.append(idx.unique()[: view.budget])
        return Keep(tuple(out))
