"""Stratified, locally centred key norm (board B_online).

K-norm ranks keys by their L2 norm over the whole context, but key norms drift with position. Here the
context of each head is cut into 8 equal-length strata; a key's score is how far its norm sits below its
stratum's median (in units of the stratum's median absolute deviation), and every stratum keeps an equal
share of the budget. 4 sink tokens and the last 8 tokens are kept outright.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class StratifiedKeyNorm(EvictionMethod):
    name = "stratified_key_norm"
    strata = 8
    sinks = 4
    recent = 8

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        norms = view.keys.float().norm(dim=-1)
        heads = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            heads.append(idx[self._pick(norms[h, idx], min(view.budget, idx.numel()))])
        return Keep(tuple(heads))

    def _pick(self, norm: torch.Tensor, budget: int) -> torch.Tensor:
        n = norm.numel()
        fixed = torch.zeros(n, dtype=torch.bool, device=norm.device)
        fixed[: min(self.sinks, n)] = True
        fixed[max(0, n - self.recent):] = True
        if int(fixed.sum()) >= budget:  # tiny budgets: sinks first, then the newest
            order = torch.cat([torch.arange(min(self.sinks, n)), torch.arange(n - 1, min(self.sinks, n) - 1, -1)])
            return order[:budget].to(norm.device).sort().values
        s = min(self.strata, n)
        stratum = torch.div(torch.arange(n, device=norm.device) * s, n, rounding_mode="floor")
        score = torch.empty_like(norm)
        for j in range(s):
            m = stratum == j
            x = norm[m]
            med = x.median()
            mad = (x - med).abs().median().clamp_min(1e-4)
            score[m] = (med - x) / mad  # positive: lower norm than its neighbours
        score = score.masked_fill(fixed, float("-inf"))
        free = budget - int(fixed.sum())
        open_per = torch.bincount(stratum[~fixed], minlength=s)
        quota = torch.minimum(torch.full_like(open_per, free // s), open_per)
        for j in torch.argsort(open_per - quota, descending=True).tolist():  # hand out what is left
            if int(quota.sum()) >= free:
                break
            quota[j] += min(int(open_per[j] - quota[j]), free - int(quota.sum()))
        chosen = fixed.clone()
        for j in range(s):
            if int(quota[j]) > 0:
                members = torch.nonzero((stratum == j) & ~fixed).flatten()
                chosen[members[score[members].topk(int(quota[j])).indices]] = True
        return torch.nonzero(chosen).flatten()
