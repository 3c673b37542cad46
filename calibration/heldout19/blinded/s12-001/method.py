"""Support-sized head budgets over the repeat pass (board B_offline).

KVzip's reconstruction score (max attention over the repeat-pass queries and the group) ranks each KV head's tokens;
the layer's budget is then split across KV heads in proportion to each head's effective support, exp(entropy) of its
normalised score distribution, clamped to [0.5, 2] x the mean budget. A head that spreads its need over many tokens
gets more room than a head that needs a few.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SupportSizedHeads(EvictionMethod):
    name = "support_sized_heads"
    reconstruction_queries = True
    sinks = 4
    lo, hi = 0.5, 2.0

    def _budgets(self, score: torch.Tensor, valid: torch.Tensor, budget: int) -> torch.Tensor:
        h = score.shape[0]
        p = score.clamp_min(0).masked_fill(~valid, 0)
        p = p / p.sum(dim=1, keepdim=True).clamp_min(1e-12)
        ent = -(p * p.clamp_min(1e-12).log()).sum(dim=1)
        support = ent.exp()
        share = support / support.sum() * (budget * h)
        share = share.clamp(self.lo * budget, self.hi * budget)
        share = share * (budget * h) / share.sum()
        ks = share.floor().long()
        ks = torch.minimum(ks, valid.sum(dim=1))
        left = budget * h - int(ks.sum())
        for i in (share - share.floor()).argsort(descending=True).tolist():
            if left <= 0:
                break
            if int(ks[i]) < int(valid[i].sum()):
                ks[i] += 1
                left -= 1
        return ks

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(view.attention(reduce="max"), "max")
        valid = view.valid_mask()
        ks = self._budgets(score, valid, view.budget)
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, ks, view.valid)
