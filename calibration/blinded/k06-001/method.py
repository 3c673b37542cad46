import torch
from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    p1 = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            b = min(view.budget, idx.numel())
            p2 = idx[:min(self.p1, b)]
            recent = idx[idx.numel() - (b - p2.numel()):] if b > p2.numel() else idx[:0]
            out.append(torch.cat([p2, recent]))
        return Keep(tuple(out))
