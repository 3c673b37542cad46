"""Last-query focus: a new eviction rule."""


from harness.api import EvictionMethod, Keep, LayerView


class LastQueryFocus(EvictionMethod):
    name = "lqf"
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
