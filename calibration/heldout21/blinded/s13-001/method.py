"""LazyLLM-style progressive pruning of the prefill cache (board A). This is a port.

Port of LazyLLM (Fu et al., 2024, "LazyLLM: Dynamic Token Pruning for Efficient Long Context LLM Inference",
arXiv 2407.14057), training-free as in the paper: token importance is the attention the last prompt token pays each
token (averaged over the query heads, here over each KV head's group), and pruning is progressive: shallow layers keep
more tokens, deep layers fewer.

Deviations from the paper, because the harness evicts KV entries once after prefill rather than pruning hidden states
during the forward pass:
- LazyLLM prunes the tokens' hidden states at a few chosen layers so later layers never compute them, and keeps an
  auxiliary cache to revive pruned tokens when later generation steps need them. Here each layer's KV cache is pruned
  independently after prefill, and nothing is revived.
- The progressive schedule is expressed with ``layer_budgets``: four equal stages of the attention layers keep
  1.45 / 1.15 / 0.85 / 0.55 x the mean budget (summing to the mean), instead of LazyLLM's per-layer top-k percentile
  schedule.
- The importance is computed per KV head (each head keeps its own tokens); the paper's score is shared by all heads.
- The first 4 tokens and the question span are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LazyLLMPort(EvictionMethod):
    name = "lazyllm_port"
    query_window = 1
    question_queries = True
    stage_scale = (1.45, 1.15, 0.85, 0.55)
    sinks = 4

    def layer_budgets(self, mean_budget: int, n_tokens: int, model) -> list[int]:
        layers = list(model.attention_layers)
        n = len(layers)
        out = []
        for i in range(n):
            stage = min(len(self.stage_scale) - 1, i * len(self.stage_scale) // n)
            out.append(max(1, int(mean_budget * self.stage_scale[stage])))
        over = sum(out) - mean_budget * n
        j = 0
        while over > 0:                      # trim rounding excess from the deepest layers
            k = n - 1 - (j % n)
            if out[k] > 1:
                out[k] -= 1
                over -= 1
            j += 1
        return [min(b, n_tokens) for b in out]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        last = view.query_positions.argmax()
        att = view.attention()[:, last]                     # (H_q, T): the last prompt token's attention
        score = view.group(att, "mean")
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
