"""GemFilter ported as one-shot eviction (board A).

Port of GemFilter (Shi et al., 2024, "Discovering the Gems in Early Layers: Accelerating Long-Context LLMs with
1000x Input Token Reduction", arXiv 2409.17422). GemFilter runs the model only up to an early "filter" layer,
takes the attention of the last prompt token (the end of the question) at that layer, summed over its heads, keeps
the top-k token positions, and re-runs the whole model on those tokens only, so every layer holds the same
positions. The filter layer is early-to-middle (layer 13 of 32 for Llama 3.1 8B); here 40 % of the attention
layers, rounded (layer 12 of SmolLM2's 30).

Port, because the harness evicts layer by layer after one prefill rather than re-running the model: the layers
up to the filter layer each keep the top-k of their own last-query attention (the same set for every KV head);
from the filter layer on, every layer keeps the positions the filter layer chose. Nothing else is force-kept (as
in GemFilter's selection; the question's last token is the query and usually ranks itself high).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class GemFilterEviction(EvictionMethod):
    name = "gemfilter_eviction"
    query_window = 1
    filter_depth = 0.4

    def setup(self, model) -> None:
        layers = list(model.attention_layers)
        self._filter = layers[min(len(layers) - 1, round(self.filter_depth * len(layers)))]
        self._chosen: dict = {}

    def _last_query_choice(self, view: LayerView) -> torch.Tensor:
        attn = view.attention(view.queries[:, -1:])[:, 0]                # (H_q, T)
        valid = view.valid_mask()
        score = attn.sum(dim=0).masked_fill(~valid.all(dim=0), float("-inf"))
        k = min(view.budget, int(valid.sum(dim=1).min()))
        return score.topk(k).indices.sort().values

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_filter"):
            self.setup(view.model)
        prompt = (view.n_tokens, int(view.positions[0, -1]), int(view.query_positions[-1]), view.budget)
        if view.layer > self._filter and prompt in self._chosen:
            pos = self._chosen[prompt]
            row = view.positions[0]
            where = torch.searchsorted(row, pos).clamp(max=row.numel() - 1)
            if bool((row[where] == pos).all()):
                return Keep.same_for_all_heads(where, view.n_kv_heads)
        idx = self._last_query_choice(view)
        if view.layer == self._filter:
            if len(self._chosen) > 64:
                self._chosen.clear()
            self._chosen[prompt] = view.positions[0, idx].clone()
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
