from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    query_window = 1 << 30
    p1 = 0.5

    def select(self, view: LayerView) -> Keep:
        acc = view.recall('method')
        if view.queries is not None:
            seen = view.state.get('s2', -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                attn = view.attention(view.queries[:, fresh]) if not bool(fresh.all()) else view.attention()
                acc = acc + view.group(attn.sum(dim=1), 'sum')
                view.state['s2'] = int(view.query_positions.max())
        view.remember('method', acc)
        valid = view.valid_mask()
        recent = int(view.budget * self.p1)
        scores = acc.clone()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent):n] = float('inf')
        return Keep.from_topk(scores, view.budget, view.valid)
