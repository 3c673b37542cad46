from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries[:, -1:])[:, 0]
        valid = view.valid_mask()
        if view.valid is not None:
            attn = attn.masked_fill(~valid.repeat_interleave(view.model.group_size, 0), 0.0)
        scores = attn.mean(dim=0)
        k = min(view.budget, int(valid.sum(dim=1).min()))
        idx = scores.masked_fill(~valid.all(dim=0), float('-inf')).topk(k).indices.sort().values
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
