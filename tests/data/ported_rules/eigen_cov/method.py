import torch
from harness.api import EvictionMethod, Keep, LayerView


class Joint(EvictionMethod):
    query_window = 32
    r = 16

    def select(self, view: LayerView) -> Keep:
        out = []
        g = view.model.group_size
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            q = view.queries[h * g:(h + 1) * g].flatten(0, 1).float()
            cov = k.T @ k / k.shape[0] + q.T @ q / q.shape[0]
            u, _, _ = torch.linalg.svd(cov)
            p = u[:, : self.r]
            s = torch.softmax((q @ p) @ (k @ p).T, dim=-1).mean(0)
            out.append(s)
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
