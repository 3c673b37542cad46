"""Strata Quota: spread the budget over the context's position strata by the square root of their attention mass.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the signal (attention of the context's last 32 queries,
summed, averaged over each KV head's query heads) and borrows the allocation idea of Ada-KV (Feng et al., 2024,
arXiv 2407.11550), which shares a layer's budget across heads by their attention mass, but applies it along the
sequence instead of across heads: the context (window excluded) is cut into 8 equal strata by position, each
stratum gets a quota proportional to the square root of the window attention it holds (at least one slot), and
each stratum fills its quota with its own top tokens. The square root damps the pull of the region right before
the window, which on a query-agnostic board is usually over-attended (the window looks at its own neighbourhood),
so that distant regions a later question may ask about keep a share. Like StreamingLLM (Xiao et al., 2023,
arXiv 2309.17453) the recent window is kept whole.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _quotas(mass: torch.Tensor, total: int, caps: torch.Tensor) -> torch.Tensor:
    """Integer quotas ~ sqrt(mass), each >= 1 and <= its cap, summing to at most total (largest remainders)."""
    want = mass.clamp_min(0).sqrt()
    want = want / want.sum().clamp_min(1e-12) * total
    q = torch.minimum(want.floor().long().clamp_min(1), caps)
    while int(q.sum()) > total:
        q[int(torch.argmax(q))] -= 1
    left = total - int(q.sum())
    for i in (want - q.float()).argsort(descending=True).tolist():
        if left <= 0:
            break
        if q[i] < caps[i]:
            q[i] += 1
            left -= 1
    return q


class StrataQuota(EvictionMethod):
    name = "strata_quota"
    query_window = 32
    n_strata = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = view.group(view.attention(reduce="sum"), "mean")
        window = view.positions >= view.query_positions.min()
        out = []
        for h in range(view.n_kv_heads):
            win = torch.nonzero(valid[h] & window[h]).flatten()[-view.budget:]
            ctx = torch.nonzero(valid[h] & ~window[h]).flatten()
            room = view.budget - win.numel()
            if room <= 0 or ctx.numel() == 0:
                out.append(win)
                continue
            strata = torch.tensor_split(ctx, min(self.n_strata, ctx.numel()))
            mass = torch.stack([score[h, s].sum() for s in strata])
            caps = torch.tensor([s.numel() for s in strata], device=mass.device)
            quota = _quotas(mass, min(room, ctx.numel()), caps)
            picked = [s[score[h, s].topk(int(n)).indices] for s, n in zip(strata, quota) if int(n) > 0]
            out.append(torch.cat([win, *picked]).sort().values)
        return Keep(tuple(out))
