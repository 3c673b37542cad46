"""Replay importance: the model re-reads the context; each cached pair is worth the strongest attention a re-reading
query gives it, that query's weight taken relative to its own size, times how much the pair's value can move the
output. Pairs below a bar relative to the head's best go, the newest tokens always stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class ReplayImportance(EvictionMethod):
    name = "replay_importance"
    reconstruction_queries = True
    keep_last = 32

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        k = view.keys.float()
        q = view.queries.float()
        out = []
        for h in range(view.n_kv_heads):
            qh = q[h * g:(h + 1) * g].reshape(-1, k.shape[-1])
            a = torch.softmax(qh @ k[h].T * view.model.scale, dim=-1)
            a = a / qh.norm(dim=-1, keepdim=True)
            out.append(a.max(dim=0).values * view.values[h].float().norm(dim=-1))
        worth = torch.stack(out)
        worth[:, -self.keep_last:] = float("inf")
        return Keep.from_topk(worth, view.budget, view.valid)
