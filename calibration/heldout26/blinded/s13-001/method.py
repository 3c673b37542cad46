"""Progressive last-token pruning: a port of LazyLLM to KV eviction (board A, query-aware prefill).

Source: LazyLLM: Dynamic Token Pruning for Efficient Long Context LLM Inference (Fu et al., 2024,
arXiv:2407.14057). LazyLLM scores every prompt token by the attention the last prompt token pays it, averaged
over the layer's heads, and prunes progressively more tokens the deeper the layer. This file ports that rule
to the harness's interface:

- score: the last prompt position's attention (the end of the question on board A), averaged over all query
  heads of the layer, one ranking shared by every KV head, as LazyLLM prunes whole tokens;
- progressive schedule: layer l keeps ``mean x (1 + spread) -> mean x (1 - spread)`` linearly from the first to
  the last attention layer (spread 0.4), so the layer mean is the board's budget.

Deviations from the paper: the pruned tokens' KV entries are evicted for good (LazyLLM prunes hidden states and
can revive a token later through its auxiliary cache; nothing is revived here); the schedule is linear per
layer instead of the paper's pruning at a few chosen layers with fixed percentiles; it is applied once after
prefill, not again at every generation step.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class LazyLLMPort(EvictionMethod):
    name = "lazyllm_port"
    query_window = 1
    spread = 0.4

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        layers = len(model.attention_layers)
        if layers < 2:
            return None
        raw = [mean_budget * (1 + self.spread - 2 * self.spread * i / (layers - 1)) for i in range(layers)]
        out = [max(1, min(n_tokens, int(b))) for b in raw]
        while sum(out) > mean_budget * layers:       # clipping and flooring never overspend, but make sure
            j = max(range(layers), key=lambda i: out[i])
            out[j] -= 1
        return out

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.budget >= int(valid.sum(dim=1).min()):
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        last = view.attention(view.queries[:, -1:])[:, 0]          # (H_q, T): the last prompt token's attention
        if view.valid is not None:
            last = last.masked_fill(~valid.repeat_interleave(view.model.group_size, 0), 0.0)
        score = last.mean(dim=0)                                   # averaged over all heads of the layer
        shared = valid.all(dim=0)
        k = min(view.budget, int(shared.sum()))
        keep = score.masked_fill(~shared, float("-inf")).topk(k).indices.sort().values
        return Keep.same_for_all_heads(keep, view.n_kv_heads)
