"""TOVA (Oren et al., 2024, arXiv 2401.06104, "Transformers are Multi-State RNNs"): score each cached token
by the attention of the current (last) query, averaged over all heads of the layer; keep the top tokens, the
same set for every KV head. Runs at prefill and whenever a layer reaches its cap while decoding; like the
official code, no token is force-kept. The official code drops one token per step; the harness asks once per block
of steps (board C), so the block goes at once, by the current query's attention (the rule TOVA also applies to
the prompt, where it drops many tokens by the last query)."""


from harness.api import EvictionMethod, Keep, LayerView


class TOVA(EvictionMethod):
    name = "tova"
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries[:, -1:])[:, 0]  # (H_q, T): the last query only
        valid = view.valid_mask()
        if view.valid is not None:  # a padded view: average only where every head has a token
            attn = attn.masked_fill(~valid.repeat_interleave(view.model.group_size, 0), 0.0)
        scores = attn.mean(dim=0)  # one score per token for the whole layer
        k = min(view.budget, int(valid.sum(dim=1).min()))
        idx = scores.masked_fill(~valid.all(dim=0), float("-inf")).topk(k).indices.sort().values
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
