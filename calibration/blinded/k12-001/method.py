import torch
from harness.api import EvictionMethod, Keep, LayerView

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    p1 = 0

    def select(self, view: LayerView) -> Keep:
        g = torch.Generator().manual_seed(self.p1 * 1000003 + view.layer * 7919 + view.n_tokens)
        scores = torch.rand(view.keys.shape[:2], generator=g).to(view.keys.device)
        return Keep.from_topk(scores, view.budget, view.valid)
