"""Square-root strata (board B_online, query-agnostic prefill).

Without the question, the closing rows' attention (query-agnostic SnapKV, as evaluated in KVzip, arXiv
2505.23416) is a biased guide: it favours what the end of the context is about, and whole stretches that a later
question may ask for get nothing. This method splits each head's context into 8 equal strata by position and
gives every stratum a quota of the free slots proportional to the square root of the closing rows' attention
mass on it (a concave allocation: attended strata still get more, but no stratum is starved), at least one slot
each; inside a stratum tokens are ranked by the same attention. Slots a stratum cannot use (it is smaller than
its quota) are re-offered to the others by the same rule. The closing 32 rows and the first 4 tokens (attention
sinks, StreamingLLM, arXiv 2309.17453) are kept outside the strata.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class SquareRootStrata(EvictionMethod):
    name = "sqrt_strata"
    query_window = 32
    strata = 8
    n_sink = 4

    def _quotas(self, mass: torch.Tensor, size: torch.Tensor, free: int) -> torch.Tensor:
        """Integer quotas per stratum summing to min(free, size.sum())."""
        quota = torch.zeros_like(size)
        left = min(free, int(size.sum()))
        open_ = size > 0
        while left > 0 and bool(open_.any()):
            w = mass.clamp_min(0).sqrt() * open_
            w = torch.where(open_, w + 1e-9, w)
            share = (w / w.sum() * left).floor().long()
            share = torch.maximum(share, open_.long())           # at least one slot for an open stratum
            share = torch.minimum(share, size - quota)
            while int(share.sum()) > left:                       # never hand out more than is left
                j = int(torch.argmax(share))
                share[j] -= 1
            quota += share
            left -= int(share.sum())
            open_ = quota < size
            if int(share.sum()) == 0:
                break
        return quota

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")            # (H_kv, T)
        ok = view.valid_mask()
        qmin = int(view.query_positions.min())
        fixed = ((view.positions >= qmin) | (view.positions < self.n_sink)) & ok
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(ok[h] & ~fixed[h]).flatten()
            fixed_idx = torch.nonzero(fixed[h]).flatten()
            free = max(0, view.budget - fixed_idx.numel())
            if free == 0 or idx.numel() == 0:
                keep = fixed_idx[view.positions[h, fixed_idx].argsort(descending=True)[:view.budget]]
                out.append(keep.sort().values)
                continue
            stratum = (torch.arange(idx.numel(), device=idx.device) * self.strata) // idx.numel()
            a = att[h, idx]
            mass = torch.zeros(self.strata, device=a.device).index_add_(0, stratum, a)
            size = torch.bincount(stratum, minlength=self.strata)
            quota = self._quotas(mass, size, free)
            chosen = []
            for s in range(self.strata):
                q = int(quota[s])
                if q:
                    members = (stratum == s).nonzero().flatten()
                    chosen.append(idx[members[a[members].topk(q).indices]])
            out.append(torch.cat([fixed_idx, *chosen]).sort().values)
        return Keep(tuple(out))
