from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    reconstruction_queries = True
    p1 = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries, reduce='max')
        p2, t = (view.n_kv_heads, view.n_tokens)
        scores = attn.reshape(p2, view.model.group_size, t).amax(dim=1)
        scores[:, :self.p1] = float('inf')
        return Keep.from_topk(scores, view.budget, view.valid)
