"""Square-root stratified window attention (board B_online, query-agnostic prefill).

A window-attention ranking (SnapKV, Li et al., 2024) spends the budget where the closing rows look, and on board B
those rows are not the question: whole stretches of the context can end up with nothing kept, and a later question
about them has nothing to read. We stratify. The context (outside the kept window and sinks) is cut into 8 strata of
equal length; each stratum is given a share of the remaining budget proportional to the square root of the window
attention mass it holds (at least one token each while budget lasts), and inside a stratum tokens are ranked by
that attention. The square root flattens the allocation without ignoring it. Attention: closing 32 context rows,
causal, summed over the rows, averaged over the KV head's query heads. The window's tokens and 4 opening tokens
(StreamingLLM's sinks, Xiao et al., 2023) are kept first.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _allot(mass: torch.Tensor, sizes: torch.Tensor, budget: int) -> torch.Tensor:
    """Integer shares of ``budget`` proportional to sqrt(mass), capped by each stratum's size."""
    share = torch.zeros_like(sizes)
    left = budget
    open_ = sizes > 0
    while left > 0 and bool(open_.any()):
        w = mass.clamp_min(0).sqrt() * open_
        w = torch.where(w.sum() > 0, w, open_.float())
        want = (w / w.sum() * left).floor().long()
        if int(want.sum()) == 0:
            want[int(torch.argmax(w))] = 1
        add = torch.minimum(want, sizes - share)
        share += add
        left -= int(add.sum())
        open_ = share < sizes
        if int(add.sum()) == 0:
            break
    return share


class SqrtStratified(EvictionMethod):
    name = "sqrt_stratified"
    query_window = 32
    strata = 8
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")
        valid = view.valid_mask()
        fixed_all = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            fixed = fixed_all[h][idx]
            b = min(view.budget, idx.numel())
            keep_fixed = idx[fixed]
            if keep_fixed.numel() >= b:
                out.append(keep_fixed[keep_fixed.numel() - b:])
                continue
            free = idx[~fixed]
            n = free.numel()
            stratum = torch.div(torch.arange(n, device=free.device) * self.strata, max(1, n), rounding_mode="floor")
            a = att[h][free]
            mass = torch.zeros(self.strata, device=a.device).index_add_(0, stratum, a)
            sizes = torch.bincount(stratum, minlength=self.strata)
            share = _allot(mass.cpu(), sizes.cpu(), b - keep_fixed.numel())
            chosen = [keep_fixed]
            for s in range(self.strata):
                k = int(share[s])
                if k:
                    members = free[stratum == s]
                    chosen.append(members[att[h][members].topk(k).indices])
            out.append(torch.cat(chosen).sort().values)
        return Keep(tuple(out))
