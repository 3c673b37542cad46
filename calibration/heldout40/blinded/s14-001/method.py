"""Enough Then Recent: at each cap, keep just enough attended tokens to cover most of the attention, then the
newest ones.

Decode-time eviction usually splits the budget in fixed shares (H2O: half heavy hitters, half recent). Here the
split follows the attention itself: the newest 32 queries' attention (maxed over a KV head's query heads, summed
over the queries, normalised per head) is sorted, and tokens are taken in that order until they cover 90 % of it
or reach three quarters of the budget; whatever budget is left goes to the newest tokens not yet taken. Focused
heads thus keep a short attention list and a long recent window; diffuse heads the other way round. The first
two tokens are always kept as sinks. Builds on H2O, TOVA and StreamingLLM.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class EnoughThenRecent(EvictionMethod):
    name = "enough_then_recent"
    query_window = 32
    cover = 0.9
    max_attention_share = 0.75
    sinks = 2

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        mass = view.group(view.attention(reduce="sum"), "max").masked_fill(~valid, 0.0)
        mass = mass / mass.sum(dim=1, keepdim=True).clamp_min(1e-12)
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            budget = min(view.budget, n)
            keep = torch.zeros(n, dtype=torch.bool, device=mass.device)
            keep[: min(self.sinks, budget)] = True
            order = mass[h, :n].argsort(descending=True)
            covered = torch.cumsum(mass[h, :n][order], dim=0)
            n_cover = int((covered < self.cover).sum()) + 1
            n_cover = min(n_cover, int(budget * self.max_attention_share))
            for i in order[:n_cover].tolist():
                if int(keep.sum()) >= budget:
                    break
                keep[i] = True
            left = budget - int(keep.sum())
            if left > 0:
                free = torch.nonzero(~keep).flatten()
                keep[free[free.numel() - left:]] = True
            out.append(torch.nonzero(keep).flatten())
        return Keep(tuple(out))
