"""Enough Is Enough: keep tokens in order of importance only until the window's attention is explained.

The last 32 context queries attend over the cache; tokens are taken in decreasing order of the attention they
receive (summed over the window, mean over a KV head's query heads) and the method stops as soon as the kept
columns hold 99 % of the Frobenius norm of the window's attention matrix: past that point more tokens change
nothing the window can see, so the budget is an upper bound, not a target. A recent tail of the context is
protected first and the importance order fills what is left.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class EnoughIsEnough(EvictionMethod):
    name = "enough_is_enough"
    query_window = 32
    explained = 0.99
    tail_frac = 0.3

    def _stop(self, a: torch.Tensor, order: torch.Tensor) -> int:
        """Smallest k such that the top-k columns hold `explained` of the squared Frobenius norm."""
        col = (a * a).sum(dim=(0, 1))[order]                      # per column, in importance order
        frac = col.cumsum(0) / col.sum().clamp_min(1e-12)
        return int((frac < self.explained ** 2).sum()) + 1

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        counts = view.valid_mask().sum(dim=1)
        tail = min(view.budget, int(self.tail_frac * t))
        room = view.budget - tail
        attn = view.attention()                                   # (H_q, 32, T)
        g = view.model.group_size
        picks = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            newest = torch.arange(max(0, n - tail), n, device=view.keys.device)
            if room <= 0 or n - tail <= 0:
                picks.append(newest)
                continue
            a = attn[h * g:(h + 1) * g, :, : n - tail]
            imp = a.sum(dim=1).mean(dim=0)
            order = imp.argsort(descending=True)
            k = min(room, self._stop(a, order))
            picks.append(torch.cat([order[:k].sort().values, newest]))
        return Keep(tuple(picks))
