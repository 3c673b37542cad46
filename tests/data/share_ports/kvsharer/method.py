import torch

from harness.api import EvictionMethod, Keep, LayerView


class Borrow(EvictionMethod):
    query_window = 8
    gap = 4.0

    def setup(self, model):
        self.digest = {}
        self.chosen = {}

    def _own(self, view):
        q = view.group(view.queries.float(), "mean")
        w = torch.softmax(q @ view.keys.float().transpose(1, 2), dim=-1).sum(dim=1)
        return w.topk(min(view.budget, w.shape[-1]), dim=-1).indices

    def select(self, view: LayerView) -> Keep:
        d = view.keys.float().mean(dim=(0, 1))
        self.digest[view.layer] = d
        ref = self.digest.get(view.layer - 1)
        if ref is not None and view.layer - 1 in self.chosen:
            far = (d - ref).pow(2).sum().sqrt()
            if far > self.gap:
                self.chosen[view.layer] = self.chosen[view.layer - 1]
                return Keep(self.chosen[view.layer])
        self.chosen[view.layer] = self._own(view)
        return Keep(self.chosen[view.layer])
