"""Doubling-resolution history (board C, decode-time; rewrites entries with ``Rewrite``).

A reasoning trace needs its last few lines verbatim and only the gist of what came long before. When a layer is full
we rebuild each head's history at a resolution that halves with age: the newest r entries stay as they are, the r
blocks before them each average 2 entries, the r blocks before those average 4, then 8, and so on until the oldest
entry is covered. r is the largest value for which the levels needed to cover the history fit in the budget. An
averaged entry is the mass-weighted mean of its keys and of its values (an entry built from earlier averages carries
the count of tokens it stands for, remembered across calls by position) and takes the position of its newest token.

Contrast: StreamingLLM keeps the newest tokens verbatim and drops the rest; nothing here is dropped outright.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


def _plan(n: int, b: int) -> tuple[int, int]:
    """(r, levels): r entries per level, resolution 2**level, covering n tokens in at most b entries."""
    for levels in range(1, 64):
        r = b // levels
        if r < 1:
            break
        if r * (2 ** levels - 1) >= n:
            return r, levels
    return max(1, b // 63), 63


class DoublingHistory(EvictionMethod):
    name = "doubling_history"

    def _rebuild(self, k, v, p, mass, b):
        n = k.shape[0]
        if b >= n:
            return k, v, p, mass
        r, levels = _plan(n, b)
        # block id of each entry, counted from the newest: level l holds r blocks of 2**l entries
        age = torch.arange(n - 1, -1, -1, device=k.device)  # 0 = newest
        block = torch.empty(n, dtype=torch.long, device=k.device)
        start, base = 0, 0
        for level in range(levels):
            width = 2 ** level
            span = r * width
            sel = (age >= start) & (age < start + span)
            block[sel] = base + (age[sel] - start) // width
            start, base = start + span, base + r
        block[age >= start] = base - 1  # anything beyond the plan joins the oldest block
        block = block.max() - block  # oldest block first
        nb = int(block.max()) + 1
        w = mass.double()
        tot = torch.zeros(nb, dtype=torch.float64, device=k.device).index_add_(0, block, w)
        nk = torch.zeros(nb, k.shape[1], dtype=torch.float64, device=k.device).index_add_(0, block, k.double() * w[:, None])
        nv = torch.zeros(nb, v.shape[1], dtype=torch.float64, device=k.device).index_add_(0, block, v.double() * w[:, None])
        np_ = torch.full((nb,), -1, dtype=torch.long, device=k.device).scatter_reduce(0, block, p, "amax")
        used = tot > 0
        nk, nv, np_, tot = nk[used] / tot[used, None], nv[used] / tot[used, None], np_[used], tot[used]
        return nk.to(k.dtype), nv.to(v.dtype), np_, tot.float()

    def select(self, view: LayerView) -> Rewrite:
        mass = view.recall("mass", fill=1.0).clamp_min(1.0)
        valid = view.valid_mask()
        ks, vs, ps, out_mass = [], [], [], []
        for h in range(view.n_kv_heads):
            m = valid[h]
            k, v, p, w = self._rebuild(view.keys[h][m], view.values[h][m], view.positions[h][m], mass[h][m],
                                       view.budget)
            ks.append(k), vs.append(v), ps.append(p), out_mass.append(w)
        # remember the mass of what we return, aligned the way the next view will be padded
        t = max(x.numel() for x in ps)
        pos = torch.full((view.n_kv_heads, t), -1, dtype=torch.long, device=view.keys.device)
        mm = torch.zeros(view.n_kv_heads, t, device=view.keys.device)
        ok = torch.zeros(view.n_kv_heads, t, dtype=torch.bool, device=view.keys.device)
        for h in range(view.n_kv_heads):
            c = ps[h].numel()
            pos[h, :c], mm[h, :c], ok[h, :c] = ps[h], out_mass[h], True
        view.state["mass"] = (pos, mm, ok)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
