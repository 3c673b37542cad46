"""Averaged pot: the context streams into a pot of fixed size slice by slice; when it overflows, the closing queries'
mean attention over the pot decides what stays."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class AveragedPot(EvictionMethod):
    name = "averaged_pot"
    query_window = 16
    step = 200

    def select(self, view: LayerView) -> Keep:
        n, cap = view.n_tokens, view.budget
        pot = torch.zeros(0, dtype=torch.long)
        for a in range(0, n, self.step):
            pot = torch.cat([pot, torch.arange(a, min(a + self.step, n))])
            if pot.numel() > cap:
                k = view.keys[:, pot].float()
                q = view.queries.float().reshape(view.n_kv_heads, -1, k.shape[-1])
                w = torch.softmax(q @ k.transpose(1, 2) * view.model.scale, dim=-1).mean(1).mean(0)
                pot = pot[w.topk(cap).indices.sort().values]
        return Keep.same_for_all_heads(pot, view.n_kv_heads)
