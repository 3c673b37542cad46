"""Knockout rounds: the newest query's attention is renormalised over the tokens still in, the weaker half knocked
out, and the survivors scored again, until the budget is met."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Knockout(EvictionMethod):
    name = "knockout"
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        q = view.group(view.queries.float(), "mean")[:, -1]
        logits = torch.einsum("hd,htd->ht", q, view.keys.float()) * view.model.scale
        out = []
        for h in range(logits.shape[0]):
            alive = torch.arange(logits.shape[1])
            while alive.numel() > view.budget:
                w = torch.softmax(logits[h, alive], dim=-1)
                alive = alive[w.topk(max(view.budget, alive.numel() // 2)).indices]
            out.append(alive.sort().values)
        return Keep(tuple(out))
