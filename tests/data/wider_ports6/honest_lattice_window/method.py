"""Pooled window and a lattice: SnapKV's pooled window attention ranks the tokens, and a fifth of each head's room
goes to evenly spaced tokens, so long stretches the window never looks at keep a few representatives."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class PooledWindowLattice(EvictionMethod):
    name = "pooled_window_lattice"
    query_window = 32
    lattice_share = 0.2

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        s = F.max_pool1d(a[:, None], 7, stride=1, padding=3)[:, 0]
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            keep = torch.zeros(n, dtype=torch.bool)
            keep[max(0, n - self.query_window):] = True
            room = max(0, view.budget - int(keep.sum()))
            k_grid = int(room * self.lattice_share)
            if k_grid > 0:
                free = torch.nonzero(~keep).flatten()
                keep[free[torch.linspace(0, free.numel() - 1, k_grid).round().long()]] = True
            left = view.budget - int(keep.sum())
            if left > 0:
                keep[s[h, :n].masked_fill(keep, float("-inf")).topk(min(left, int((~keep).sum()))).indices] = True
            out.append(torch.nonzero(keep).flatten()[: view.budget])
        return Keep(tuple(out))
