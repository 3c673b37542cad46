import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    query_window = 48
    tau = 1.0
    tail = 0.25

    def _noisy(self, logits: torch.Tensor) -> torch.Tensor:
        u = torch.rand_like(logits).clamp(1e-6, 1 - 1e-6)
        g = -torch.log(-torch.log(u))
        return torch.softmax((logits + g) / self.tau, dim=-1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries
        rep = q.shape[0] // view.keys.shape[0]
        k = view.keys.repeat_interleave(rep, dim=0)
        logits = torch.matmul(q.float(), k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
        p = self._noisy(logits)
        salience = view.group(p.sum(dim=1), "sum")
        n = view.n_tokens
        tail = max(1, int(view.budget * self.tail))
        salience[:, n - tail:] = float("inf")
        return Keep.from_topk(salience, view.budget, view.valid)
