import torch

from harness.api import EvictionMethod, Keep, LayerView


class Principal(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        mu = k.mean(dim=1, keepdim=True)
        _, _, vh = torch.linalg.svd(k - mu, full_matrices=False)
        basis = vh[:, :16].transpose(1, 2)
        q = view.group(view.queries.float(), "mean")
        s = torch.softmax((q @ basis) @ (k @ basis).transpose(1, 2), dim=-1)
        return Keep.from_topk(s.sum(dim=1), view.budget, view.valid)
