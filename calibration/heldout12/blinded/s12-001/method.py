"""Interleaved pair folding (board B_online).

Neighbouring keys along the sequence are strongly alike, so most of a long context can be stored as a few
cluster centres instead of being dropped. The context between four opening and 32 closing tokens is cut into
windows of 64 entries; inside a window the entries are dealt alternately into a "movers" and an "anchors"
hand, every mover finds its most similar anchor (cosine of keys), and the strongest mover-to-anchor links of
each window are folded: the anchor becomes the centre (mean key, mean value) of everything folded into it and
keeps its own position. Windows get equal shares of the folds. A second pass over the folded sequence runs the
same way when one pass is not enough. Query-free: it needs no attention at all.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, Rewrite


class PairFold(EvictionMethod):
    name = "pair_fold"
    window = 64
    opening = 4
    closing = 32
    passes = 2

    def _pass(self, ks, vs, cnt, pos, want):
        """Fold up to ``want`` movers into anchors over the entries given (one head). Returns the new lists."""
        n = ks.shape[0]
        w = self.window
        nw = -(-n // w)
        slot = torch.full((nw * w,), -1, dtype=torch.long, device=ks.device)
        slot[:n] = torch.arange(n, device=ks.device)
        slot = slot.view(nw, w)
        mv, an = slot[:, 0::2], slot[:, 1::2]  # (nw, w/2) each; -1 = padding
        cen = F.normalize(ks / cnt[:, None], dim=-1)
        zero = torch.zeros(1, ks.shape[1], device=ks.device)
        cm = torch.cat([cen, zero])[mv]  # padding rows are zero vectors
        ca = torch.cat([cen, zero])[an]
        sim = torch.einsum("wmd,wad->wma", cm, ca).masked_fill(an[:, None, :] < 0, float("-inf"))
        best, where = sim.max(dim=-1)
        live = (mv >= 0) & (an >= 0).any(dim=1, keepdim=True)
        best = best.masked_fill(~live, float("-inf"))
        movers_per = live.sum(dim=1)
        total = int(movers_per.sum())
        want = min(want, total)
        if want <= 0:
            return ks, vs, cnt, pos, 0
        share = (want * movers_per) // total
        extra = want - int(share.sum())
        room = movers_per - share
        order = torch.nonzero(room > 0).flatten()[:extra]  # the remainder, window by window
        share[order] += 1
        ranked = best.argsort(dim=-1, descending=True)
        rank = torch.empty_like(ranked).scatter_(1, ranked, torch.arange(ranked.shape[1], device=ks.device).expand_as(ranked))
        chosen = rank < share[:, None]
        src = mv[chosen]
        dst = an.gather(1, where)[chosen]
        ks = ks.index_add(0, dst, ks[src])
        vs = vs.index_add(0, dst, vs[src])
        cnt = cnt.index_add(0, dst, cnt[src])
        stay = torch.ones(n, dtype=torch.bool, device=ks.device)
        stay[src] = False
        return ks[stay], vs[stay], cnt[stay], pos[stay], int(src.numel())

    def select(self, view: LayerView) -> Keep | Rewrite:
        n = view.n_tokens
        b = view.budget
        if b >= n or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        lo, hi = self.opening, n - self.closing
        need = n - b
        middle = max(0, hi - lo)
        reach = 0
        left = middle
        for _ in range(self.passes):
            reach += left // 2
            left -= left // 2
        if need > reach or hi <= lo:
            return self._edges(view)
        keys, vals = view.keys.float(), view.values.float()
        out_k, out_v, out_p = [], [], []
        for h in range(view.n_kv_heads):
            ks, vs = keys[h, lo:hi].clone(), vals[h, lo:hi].clone()
            cnt = torch.ones(hi - lo, device=keys.device)
            pos = view.positions[h, lo:hi].clone()
            todo = need
            for _ in range(self.passes):
                if todo <= 0:
                    break
                ks, vs, cnt, pos, done = self._pass(ks, vs, cnt, pos, todo)
                todo -= done
            mk = torch.cat([keys[h, :lo], ks / cnt[:, None], keys[h, hi:]])
            mv = torch.cat([vals[h, :lo], vs / cnt[:, None], vals[h, hi:]])
            mp = torch.cat([view.positions[h, :lo], pos, view.positions[h, hi:]])
            out_k.append(mk.to(view.keys.dtype))
            out_v.append(mv.to(view.values.dtype))
            out_p.append(mp.long())
        return Rewrite(tuple(out_k), tuple(out_v), tuple(out_p))

    def _edges(self, view: LayerView) -> Keep:
        # the opening entries and the newest ones
        p = view.positions.float()
        score = torch.where(view.positions < self.opening, p + 1e9, p)
        return Keep.from_topk(score, view.budget)
