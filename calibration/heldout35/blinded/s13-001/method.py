"""Head Profiles: every KV head gets the simplest keep pattern that still covers what its window reads.

At prefill the observation window's attention is used to profile each head. Four keep patterns of increasing
complexity are tried in turn: the opening tokens alone; the opening tokens plus the most recent stretch; the
opening tokens plus a recent stretch plus the most-read tokens; and the most-read tokens alone. A head takes the
first pattern whose kept tokens receive at least 95 % of its window attention; a head no pattern satisfies
takes the last one. Heads that need little thereby keep fewer tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class HeadProfiles(EvictionMethod):
    name = "head_profiles"
    query_window = 32
    opening = 4
    cover = 0.95

    def _patterns(self, mass: torch.Tensor, n: int, b: int) -> list[torch.Tensor]:
        dev = mass.device
        open_ = torch.arange(min(self.opening, n, b), device=dev)
        rest = max(0, b - open_.numel())
        recent = torch.arange(max(open_.numel(), n - rest), n, device=dev)
        ranked = mass.clone()
        ranked[open_] = float("-inf")
        half = rest // 2
        recent_half = torch.arange(max(open_.numel(), n - half), n, device=dev)
        ranked_mix = ranked.clone()
        ranked_mix[recent_half] = float("-inf")
        mixed = torch.cat([open_, recent_half, ranked_mix.topk(min(rest - recent_half.numel(), n)).indices])
        top = mass.topk(min(b, n)).indices
        return [open_, torch.cat([open_, recent]), mixed, top]

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        if b >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        mass = view.group(view.attention(reduce="mean"), "mean")    # (H_kv, T)
        counts = view.valid_mask().sum(dim=1)
        out = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            m = mass[h, :n]
            total = float(m.sum()) or 1.0
            pats = self._patterns(m, n, b)
            choice = pats[-1]
            for p in pats:
                if float(m[p].sum()) / total >= self.cover:
                    choice = p
                    break
            out.append(torch.unique(choice)[:b])
        return Keep(tuple(out))
