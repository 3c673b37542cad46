"""Keystone (board A): a token earns its place twice: the question reads it, and it carries a direction of the
key space few other tokens carry (its ridge leverage among the layer's keys). The two are multiplied, so a
frequently read but redundant token loses to a read token nothing else can stand in for."""

import torch

from harness import EvictionMethod, Keep, LayerView


class Keystone(EvictionMethod):
    name = "keystone"
    query_window = 8
    question_queries = True
    ridge = 1e-2
    sinks = 4

    @staticmethod
    def _lev(k: torch.Tensor, ridge: float) -> torch.Tensor:
        k = k.double()
        gram = k.T @ k
        gram = gram + ridge * gram.diagonal().mean() * torch.eye(k.shape[1], dtype=k.dtype)
        sol = torch.linalg.solve(gram, k.T)                  # (D, T)
        return (k * sol.T).sum(-1).float()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        read = view.group(view.attention(reduce="sum"), "sum")
        lev = torch.stack([self._lev(view.keys[h].float().cpu(), self.ridge) for h in range(view.n_kv_heads)])
        score = read * lev.to(read.device).clamp_min(1e-6)
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
