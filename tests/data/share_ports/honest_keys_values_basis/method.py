import torch

from harness.api import EvictionMethod, Keep, LayerView


class PairedAxes(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        both = torch.cat([view.keys.float(), view.values.float()], dim=-1)
        u, _, _ = torch.linalg.svd(both, full_matrices=False)
        return Keep.from_topk(u[..., :8].pow(2).sum(-1), view.budget, view.valid)
