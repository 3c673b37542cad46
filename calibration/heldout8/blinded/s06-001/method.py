"""Reservoir slots (board B_online).

Query-agnostic compression that keeps three kinds of entries per KV head:

* the tail: the closing context tokens, untouched;
* the elite: the tokens with the largest *fading* attention mass, i.e. every context query's causal attention
  weighted by ``fade ** (distance of the query from the end)``, so that what the end of the context still reads counts
  most;
* the reservoir: a handful of slots that absorb everything else. The leftover tokens, in their original order, are
  cut into as many consecutive runs as there are slots, and each run is averaged (keys and values) into one slot.

Nothing is dropped outright: a token that is neither tail nor elite still contributes, through its run's average.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


def fading_mass(view: LayerView, fade: float, rows: int = 128) -> torch.Tensor:
    """(H_kv, T): sum over all context queries of their causal softmax, each weighted by fade**(N-1-i)."""
    q = view.queries.float()
    qpos = view.query_positions
    h_q, n, d = q.shape
    h_kv, t = view.keys.shape[:2]
    g = h_q // h_kv
    k = view.keys.float()
    kpos = view.positions
    pad = None if view.valid is None else ~view.valid
    total = torch.zeros(h_kv, t, device=k.device)
    for s in range(0, n, rows):
        qc = q[:, s:s + rows].reshape(h_kv, g, -1, d)
        c = qc.shape[2]
        lg = torch.einsum("hgcd,htd->hgct", qc, k) * view.model.scale
        block = kpos[:, None, None, :] > qpos[s:s + c].view(1, 1, c, 1)
        if pad is not None:
            block = block | pad[:, None, None, :]
        pr = lg.masked_fill(block, float("-inf")).softmax(-1).nan_to_num(0.0)
        w = fade ** (n - 1 - torch.arange(s, s + c, device=k.device, dtype=torch.float32))
        total += torch.einsum("hgct,c->ht", pr, w)
    return total / g


def _runs(count: int, slots: int) -> list[tuple[int, int]]:
    """Split ``count`` ordered items into ``slots`` consecutive runs, the longer runs first."""
    size, extra = divmod(count, slots)
    out, at = [], 0
    for i in range(slots):
        n = size + (1 if i < extra else 0)
        out.append((at, at + n))
        at += n
    return out


class ReservoirSlots(EvictionMethod):
    name = "reservoir_slots"
    query_window = 1 << 20          # every context query
    fade = 0.995
    tail = 32
    slot_share = 8                  # one reservoir slot per this many budget entries

    def select(self, view: LayerView) -> Rewrite:
        mass = fading_mass(view, self.fade) if view.queries is not None else view.positions.float()
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            k, v, p = view.keys[h, :n].float(), view.values[h, :n].float(), view.positions[h, :n]
            b = min(view.budget, n)
            if b >= n:
                ks.append(k), vs.append(v), ps.append(p)
                continue
            tail = min(self.tail, b // 4)
            slots = max(1, b // self.slot_share) if b - tail > 1 else 0
            elite_n = max(0, b - tail - slots)
            head_n = n - tail
            elite = mass[h, :head_n].topk(elite_n).indices.sort().values if elite_n else p[:0]
            rest_mask = torch.ones(head_n, dtype=torch.bool, device=k.device)
            rest_mask[elite] = False
            rest = torch.nonzero(rest_mask).flatten()
            slots = min(slots, rest.numel())
            rk, rv, rp = [], [], []
            for a, z in _runs(rest.numel(), slots) if slots else []:
                idx = rest[a:z]
                rk.append(k[idx].mean(0))
                rv.append(v[idx].mean(0))
                rp.append(p[idx[-1]])
            keep = torch.cat([elite, torch.arange(head_n, n, device=k.device)])
            kk = torch.cat([k[keep]] + ([torch.stack(rk)] if rk else []))
            vv = torch.cat([v[keep]] + ([torch.stack(rv)] if rv else []))
            pp = torch.cat([p[keep]] + ([torch.stack(rp)] if rp else []))
            order = pp.argsort()
            ks.append(kk[order]), vs.append(vv[order]), ps.append(pp[order])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
