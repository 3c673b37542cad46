"""Seam folding (board B_online, query-agnostic prefill).

Neighbouring tokens often carry keys that point the same way. Such runs form seams, and a seam can be folded into
a single entry without losing what a reader would retrieve from it. Each seam is folded around its keystone (the
member the context's closing rows attend to most): every member contributes with a Gaussian weight of its key
distance to the keystone, so the folded entry stays close to the keystone and drifts only as far as its near twins
pull it. The folded entry takes the keystone's position. If the folded context is still over budget, entries are
dropped in order of keystone attention; the closing rows are never folded or dropped.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite


class SeamFolding(EvictionMethod):
    name = "seam_folding"
    query_window = 32
    bond = 0.85          # cosine between neighbours that ties them into a seam
    longest = 8
    sigma = 1.0

    def _seams(self, k: torch.Tensor, frozen_from: int) -> list[tuple[int, int]]:
        unit = torch.nn.functional.normalize(k, dim=-1)
        tie = ((unit[1:] * unit[:-1]).sum(-1) > self.bond).tolist()
        spans, start = [], 0
        for i in range(1, k.shape[0] + 1):
            cut = (i == k.shape[0] or not tie[i - 1] or i - start >= self.longest
                   or i >= frozen_from or i - 1 >= frozen_from)
            if cut:
                spans.append((start, i))
                start = i
        return spans

    def select(self, view: LayerView):
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")          # (H_kv, T)
        ok = view.valid_mask()
        first_q = int(view.query_positions.min())
        keys, vals, poss = [], [], []
        for h in range(view.n_kv_heads):
            n = int(ok[h].sum())
            k, v, p, a = view.keys[h, :n].float(), view.values[h, :n].float(), view.positions[h, :n], att[h, :n]
            frozen_from = int((p < first_q).sum())
            nk, nv, npos, ns = [], [], [], []
            for lo, hi in self._seams(k, frozen_from):
                if hi - lo == 1:
                    nk.append(k[lo]); nv.append(v[lo]); npos.append(p[lo]); ns.append(a[lo])
                    continue
                stone = lo + int(a[lo:hi].argmax())
                w = torch.exp(-((k[lo:hi] - k[stone]) ** 2).sum(-1) / (2 * self.sigma ** 2 * k.shape[-1]))
                w = w / w.sum()
                nk.append((w[:, None] * k[lo:hi]).sum(0)); nv.append((w[:, None] * v[lo:hi]).sum(0))
                npos.append(p[stone]); ns.append(a[lo:hi].sum())
            nk, nv, npos, ns = torch.stack(nk), torch.stack(nv), torch.stack(npos), torch.stack(ns)
            ns = ns.masked_fill(npos >= first_q, float("inf"))
            if nk.shape[0] > view.budget:
                pick = ns.topk(view.budget).indices.sort().values
                nk, nv, npos = nk[pick], nv[pick], npos[pick]
            keys.append(nk.to(view.keys.dtype)); vals.append(nv.to(view.values.dtype)); poss.append(npos)
        return Rewrite(tuple(keys), tuple(vals), tuple(poss))
