import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Key surprise against a running exponential mean of the keys before it."""

    name = "ema_surprise"
    decay = 0.9
    sinks = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        n_kv, n_tok, d = k.shape
        mean = k[:, 0].clone()
        surprise = torch.zeros(n_kv, n_tok, device=k.device)
        for t in range(1, n_tok):
            surprise[:, t] = torch.linalg.norm(k[:, t] - mean, dim=-1)
            mean = self.decay * mean + (1 - self.decay) * k[:, t]
        surprise = surprise / (k.pow(2).mean(dim=(1, 2)).sqrt()[:, None] + 1e-6)
        surprise[:, : self.sinks] = float("inf")
        surprise[:, -self.recent:] = float("inf")
        return Keep.from_topk(surprise, view.budget, view.valid)
