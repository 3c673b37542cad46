"""Lead-in pooling (board B_online).

SnapKV (Li et al., 2024, arXiv 2404.14469) smooths its window scores with a symmetric pooling kernel so that a
salient token keeps its neighbours. In text the two sides are not alike: what makes a value retrievable later is
the phrase that *leads into* it ("... the code for the blue door is 4417"), while the tokens after it are usually
the start of something else. We therefore pool towards the left only: a token inherits from the tokens that follow
it, with weights 1, 0.7, 0.5, 0.35 for offsets 0..3, and inherits nothing from the tokens before it.

Window: the last 48 context queries, causal attention summed over the window and averaged over the KV head's query
heads; score_i = max_j w_j s_{i+j}. The window and the first 4 tokens (StreamingLLM, Xiao et al., 2023, arXiv
2309.17453) are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LeadInPooling(EvictionMethod):
    name = "lead_in_pooling"
    query_window = 48
    weights = (1.0, 0.7, 0.5, 0.35)
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")              # (H_kv, T)
        pooled = s.clone()
        for off, w in enumerate(self.weights[1:], start=1):
            ahead = torch.zeros_like(s)
            ahead[:, :-off] = s[:, off:]
            pooled = torch.maximum(pooled, w * ahead)
        first_q = int(view.query_positions.min())
        pinned = (view.positions < self.n_sink) | (view.positions >= first_q)
        return Keep.from_topk(pooled.masked_fill(pinned, float("inf")), view.budget, view.valid)
