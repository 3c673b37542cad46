"""PoWER-BERT's significance score as query-agnostic KV eviction (board B_online).

Port of the word-vector elimination rule of PoWER-BERT (Goyal et al., ICML 2020, arXiv 2001.08950): a token's
significance is the total attention it receives, summed over every query and every head of the layer, and the layer
keeps the most significant tokens, one set shared by all heads. Training-free port; deviations, stated:

- PoWER-BERT learns how many word-vectors each layer retains (a soft-extraction fine-tuning step); here every layer
  keeps the board's budget.
- The queries are the context's own (every context position, causal), as board B gives no question at compression
  time; the paper scores over the full bidirectional self-attention of a BERT encoder.
- The paper eliminates word-vectors from the hidden states; here the same set is kept in each KV head of the layer.
- On a ragged view only the positions every head holds can be kept (one set for all heads).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class PowerBertSignificance(EvictionMethod):
    name = "powerbert_significance"
    query_window = 1 << 20  # every context query

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        received = view.attention(reduce="sum")  # (H_q, T), summed over queries as it goes
        significance = received.sum(dim=0)  # over every head of the layer
        valid = view.valid_mask()
        shared = valid.all(dim=0)
        k = min(view.budget, int(shared.sum()))
        idx = significance.masked_fill(~shared, float("-inf")).topk(k).indices.sort().values
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
