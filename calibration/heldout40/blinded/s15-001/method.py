"""Room to Grow: keep the set of tokens that spans the most room, weighted by how much the re-reading needs them.

A kept set is judged as a whole: the volume its (need-weighted) keys span, the log-determinant of their
regularised Gram matrix. Tokens are added greedily, a block at a time, each block the tokens whose addition
would grow that volume most given what is already kept; a token the re-reading pass (board B_offline) barely
needs has a small weight and adds little room, and a token whose key repeats what is kept adds little too.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class RoomToGrow(EvictionMethod):
    name = "room_to_grow"
    reconstruction_queries = True
    ridge = 0.1
    rounds = 32

    def _need(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return torch.ones(view.keys.shape[:2], device=view.keys.device)
        need = view.group(view.attention(reduce="max"), "max")
        return need / need.amax(dim=1, keepdim=True).clamp_min(1e-12)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        need = self._need(view)
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            keys = view.keys[h, real].float()
            keys = keys / keys.norm(dim=-1).mean().clamp_min(1e-6)
            x = keys * need[h, real].clamp_min(0).sqrt()[:, None]             # need-weighted features
            d = x.shape[1]
            budget = min(view.budget, real.numel())
            step = max(1, math.ceil(budget / self.rounds))
            gram = self.ridge * torch.eye(d, device=x.device)
            taken = torch.zeros(real.numel(), dtype=torch.bool, device=x.device)
            while int(taken.sum()) < budget:
                inv = torch.linalg.inv(gram)
                room = torch.log1p(((x @ inv) * x).sum(dim=-1).clamp_min(0))
                room = room.masked_fill(taken, float("-inf"))
                n = min(step, budget - int(taken.sum()))
                pick = room.topk(n).indices
                taken[pick] = True
                gram = gram + x[pick].T @ x[pick]
            out.append(real[taken])
        return Keep(tuple(out))
