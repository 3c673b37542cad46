"""KVzip (Kim et al., 2025, arXiv 2505.23416), board B_offline: the model re-reads the context after "Repeat
the previous context exactly." (the harness's one-off reconstruction pass); each cached pair scores the max,
over the repeat queries and the query heads of its group, of the attention it receives; the first 4 tokens
are kept. Deviations, because the interface calls one layer at a time: a uniform budget per layer and head
(KVzip's default is one global threshold over all layers and heads), one repeat pass over the whole context
(the official code chunks it by ~2,000 tokens), and the softmax runs over the cached context only. Without a
reconstruction pass (other boards) it keeps the most recent tokens."""

from harness.api import EvictionMethod, Keep, LayerView


class KVzip(EvictionMethod):
    name = "kvzip"
    reconstruction_queries = True
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        # not causal: the repeat comes after every context token; max over the queries as it is computed
        attn = view.attention(view.queries, reduce="max")  # (H_q, T), never repeat x context
        h_kv, t = view.n_kv_heads, view.n_tokens
        scores = attn.reshape(h_kv, view.model.group_size, t).amax(dim=1)
        scores[:, : self.n_sink] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
