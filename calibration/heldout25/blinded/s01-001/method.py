"""Age-tier quotas (board C, decode-time).

Attention-ranked memories (H2O, Zhang et al., 2023, arXiv:2306.14048; TOVA, arXiv:2401.06104) let the whole cap be
won by whichever age band is loud right now; window memories (StreamingLLM, arXiv:2309.17453) give it all to the
newest band. Age-tier quotas sit in between: the held entries are split into tiers by age, doubling in width as
they get older, and each tier gets a fixed share of the budget that shrinks with age (1, 1/2, 1/3, ... of the
newest tier's). Inside a tier, entries compete by the highest attention they have received at any eviction so far.
The tiering and harmonic quotas are our idea; the per-token statistic is H2O's, with a max instead of a sum.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class AgeTierQuotas(EvictionMethod):
    name = "age_tier_quotas"
    query_window = 32
    first_tier = 16          # width of the newest tier, in entries

    def _tiers(self, n: int) -> list[tuple[int, int]]:
        """Index ranges (oldest first after reversal) of tiers of width 16, 32, 64, ... from the newest entry."""
        out, end, width = [], n, self.first_tier
        while end > 0:
            out.append((max(0, end - width), end))
            end -= width
            width *= 2
        return out                                   # newest tier first

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        now = view.group(view.attention(reduce="max"), "max")
        peak = torch.maximum(view.recall("peak"), now)
        view.remember("peak", peak)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            tiers = self._tiers(live.numel())
            weights = torch.tensor([1.0 / (i + 1) for i in range(len(tiers))])
            sizes = torch.tensor([b - a for a, b in tiers], dtype=torch.float32)
            quota = torch.minimum((weights / weights.sum() * view.budget).floor(), sizes)
            spare = view.budget - int(quota.sum())
            for i in range(len(tiers)):                 # hand the rounding leftover to the newest tiers first
                add = min(spare, int(sizes[i] - quota[i]))
                quota[i] += add
                spare -= add
            picks = []
            for (a, b), q in zip(tiers, quota.tolist()):
                if q <= 0:
                    continue
                s = peak[h, live[a:b]]
                picks.append(live[a:b][s.topk(int(q)).indices])
            out.append(torch.cat(picks).sort().values if picks else live[:0])
        return Keep(tuple(out))
