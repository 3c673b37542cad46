import torch

from harness.api import EvictionMethod, Keep, LayerView


class ValueSurprise(EvictionMethod):
    """Tokens whose value is poorly predicted from their key by a per-head linear map: the cache's surprises."""

    n_sinks = 4
    ridge = 1e-2

    def select(self, view: LayerView) -> Keep:
        k, v = view.keys.float(), view.values.float()
        d = k.shape[-1]
        gram = k.transpose(1, 2) @ k + self.ridge * torch.eye(d, device=k.device)                 # (H, D, D)
        w = torch.linalg.solve(gram, k.transpose(1, 2) @ v)                      # (H, D, D) ridge fit V ~ K W
        residual = (v - k @ w).norm(dim=-1) / v.norm(dim=-1).clamp_min(1e-6)    # (H, T) relative error
        residual[:, : self.n_sinks] = float("inf")
        return Keep.from_topk(residual, view.budget, view.valid)
