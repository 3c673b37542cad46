"""Recycled-attention eviction: a training-free port of Recycled Attention (Xu, Ye, Tan and Choi, "Recycled
Attention: Efficient inference for long-context language models", 2024, arXiv 2411.05787) to decode-time eviction
on board C.

Recycled Attention alternates full-attention steps with steps that attend only to a small subset of the context:
at a full step it records which tokens the current query attends to most and "recycles" that top-k set for the
following steps, together with a local window of the most recent tokens. Here the harness asks the method once
per block of decoded tokens (the layer is at its cap); that call plays the role of the paper's full-attention
step:

- the newest query's attention over the whole cache (the model's softmax with its scale, causal), summed over the
  query heads that share each KV head (the paper selects one top-k set per KV head under GQA);
- keep the newest 16 tokens (the local window) and the top tokens by that attention, up to the cap minus the block.

Deviations from the paper: the paper never discards anything (the full cache stays in memory and a full step can
bring any token back); here the cap is hard, so a token left out of the recycled set is gone for good, which makes
the method an eviction policy close in spirit to TOVA (Oren et al., 2024, arXiv 2401.06104), which also keeps what
the current query attends to. The stride between full steps is the harness's block, not a tuned hyper-parameter,
and the local-window length is ours.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RecycledEviction(EvictionMethod):
    name = "recycled_eviction"
    query_window = 1
    local = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="sum")  # (H_q, T): one query
        scores = view.group(attn, "sum")
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.local):n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
