from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    query_window = 1 << 20
    p1 = 0.5
    p2 = False

    def select(self, view: LayerView) -> Keep:
        acc = view.recall('method')
        p3 = view.recall('s2') if self.p2 else None
        if view.queries is not None:
            assert view.query_positions is not None
            seen = view.state.get('s3', -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                attn = view.attention(view.queries[:, fresh], reduce='sum') if not bool(fresh.all()) else view.attention(reduce='sum')
                acc = acc + view.group(attn, 'sum')
                if p3 is not None:
                    qpos = view.query_positions[fresh]
                    p3 = p3 + (qpos[None, None, :] >= view.positions[:, :, None]).sum(dim=-1)
                view.state['s3'] = int(view.query_positions.max())
        view.remember('method', acc)
        if p3 is not None:
            view.remember('s2', p3)
        valid = view.valid_mask()
        recent = int(view.budget * self.p1)
        scores = acc / p3.clamp_min(1) if p3 is not None else acc.clone()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent):n] = float('inf')
        return Keep.from_topk(scores, view.budget, view.valid)
