"""Age-band quotas (board C, decode-time eviction).

Plain top-k on recent attention (TOVA, Oren et al., 2024; H2O, Zhang et al., 2023) lets whichever stretch of the
trace is currently attended take the whole cache, and older stretches vanish at once. We spread the budget across
ages instead. Tokens outside the 4 opening ones (StreamingLLM's sinks) and the newest 16 are put in age bands by
floor(log2(age)), age = newest position - position. Each band gets a quota proportional to the square root of the
attention mass the newest 32 queries pay it (max over the KV head's query heads, summed over queries), at least 1
token when the band is non-empty, and never more than the band holds; inside a band the most-attended tokens are
kept. Quotas are computed with bincount and rounded by largest remainder so they sum to the free budget.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _split(total: int, weights: torch.Tensor, caps: torch.Tensor) -> torch.Tensor:
    """Integer quotas summing to min(total, caps.sum()), proportional to weights, each <= its cap, >= 1 if cap > 0."""
    quota = torch.zeros_like(caps)
    total = int(min(total, int(caps.sum())))
    if total <= 0:
        return quota
    nonempty = torch.nonzero(caps > 0).flatten()
    if nonempty.numel() > total:  # not even one per band: the heaviest bands get one each
        chosen = nonempty[weights[nonempty].topk(total).indices]
        quota[chosen] = 1
        return quota
    quota[nonempty] = 1
    left = total - int(quota.sum())
    while left > 0:
        room = caps - quota
        w = torch.where(room > 0, weights, torch.zeros_like(weights))
        if float(w.sum()) <= 0:
            w = (room > 0).float()
        share = w / w.sum() * left
        add = torch.minimum(share.floor().long(), room)
        if int(add.sum()) == 0:  # largest remainder, one at a time
            add = torch.zeros_like(room)
            add[int(torch.argmax(torch.where(room > 0, share, torch.full_like(share, -1.0))))] = 1
        quota += add
        left -= int(add.sum())
    return quota


class AgeBandQuotas(EvictionMethod):
    name = "age_band_quotas"
    query_window = 32
    sinks = 4
    newest = 16

    def on_decode(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(reduce="sum").float(), "max")  # (H_kv, T)
        real = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            pos = view.positions[h]
            idx = torch.nonzero(real[h]).flatten()
            top = int(pos[idx].max())
            fixed = idx[(pos[idx] < self.sinks) | (pos[idx] > top - self.newest)]
            rest = idx[(pos[idx] >= self.sinks) & (pos[idx] <= top - self.newest)]
            free = view.budget - fixed.numel()
            if free <= 0 or rest.numel() == 0:
                keep = fixed[pos[fixed].argsort(descending=True)[:max(view.budget, 0)]]
                out.append(keep.sort().values)
                continue
            age = (top - pos[rest]).clamp_min(1).float()
            band = age.log2().floor().long()
            nb = int(band.max()) + 1
            mass = torch.bincount(band, weights=attn[h, rest], minlength=nb)
            count = torch.bincount(band, minlength=nb)
            quota = _split(free, mass.clamp_min(0).sqrt(), count)
            picks = []
            for b in torch.nonzero(quota).flatten().tolist():
                members = rest[band == b]
                best = attn[h, members].topk(int(quota[b])).indices
                picks.append(members[best])
            out.append(torch.cat([fixed] + picks).sort().values)
        return Keep(tuple(out))

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
