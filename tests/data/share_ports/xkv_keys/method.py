import torch

from harness.api import EvictionMethod, Keep, LayerView


class Layered(EvictionMethod):
    query_window = 4

    def setup(self, model):
        self.store = {}

    def select(self, view: LayerView) -> Keep:
        cur = view.keys.float()
        self.store[view.layer] = cur
        prior = [self.store[i] for i in range(view.layer - 2, view.layer) if i in self.store]
        rows = []
        for h in range(cur.shape[0]):
            group = torch.cat([cur[h]] + [p[h] for p in prior if p.shape == cur.shape], dim=1)
            lead, _, _ = torch.linalg.svd(group, full_matrices=False)
            rows.append(lead[:, :12].norm(dim=1))
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
