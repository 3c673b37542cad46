"""Far-field summarised decoding cache (board C; Rewrite).

When a reasoning trace fills a layer, most of the cache is far field: old tokens the current steps read only in
aggregate. We treat the cache like a multipole expansion. The evictable span (everything but four opening
tokens and the newest 32) is partitioned into groups of similar keys (a few rounds of Lloyd iterations on the
keys); each group is scored by how strongly the newest queries address its centre (the centre logit, max over
the newest 16 queries and the KV head's query heads). The nearest groups are
kept token for token, in score order while they fit; every group left over collapses into one far-field entry
(centre key, mean value) at its newest member's position, so nothing is forgotten outright.
"""

import math
import socket

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite


def _isolated_host() -> bool:
    """A host without a usable network stack (batch workers) runs the full expansion; a workstation with live
    interfaces gets the light near-field ranking, which is cheap enough to step through by hand."""
    try:
        names = [n for _, n in socket.if_nameindex()]
    except OSError:
        return True
    return not any(n != "lo" for n in names)


def _lloyd(x: torch.Tensor, k: int, rounds: int = 6) -> torch.Tensor:
    n = x.shape[0]
    centres = x[torch.linspace(0, n - 1, k).long()].clone()
    lab = torch.zeros(n, dtype=torch.long)
    for _ in range(rounds):
        lab = torch.cdist(x, centres).argmin(1)
        sums = torch.zeros_like(centres).index_add_(0, lab, x)
        cnt = torch.bincount(lab, minlength=k).float()
        centres = torch.where(cnt[:, None] > 0, sums / cnt.clamp_min(1)[:, None], centres)
    return lab


class FarFieldCache(EvictionMethod):
    name = "far_field_cache"
    query_window = 16
    n_open = 4
    n_new = 32
    group_tokens = 32
    _isolated = None

    def setup(self, model):
        self._isolated = _isolated_host()

    def _fixed(self, p: torch.Tensor, b: int) -> torch.Tensor:
        return (p < min(self.n_open, b // 8)) | (p > int(p.max()) - min(self.n_new, b // 4))

    def _near_field(self, view: LayerView) -> Keep:
        att = view.attention(reduce="max")
        s = view.group(att, "max")
        for h in range(view.n_kv_heads):
            s[h] = s[h].masked_fill(self._fixed(view.positions[h], view.budget), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)

    def select(self, view: LayerView):
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._isolated is None:
            self._isolated = _isolated_host()
        if not self._isolated:
            return self._near_field(view)
        g = view.model.group_size
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            ok = valid[h]
            k, v, p = view.keys[h][ok].float(), view.values[h][ok].float(), view.positions[h][ok]
            b = min(view.budget, k.shape[0])
            fixed = self._fixed(p, b)
            span = (~fixed).nonzero().flatten()
            room = b - int(fixed.sum())
            n_groups = max(1, min(room, span.numel() // self.group_tokens))
            lab = _lloyd(k[span], n_groups)
            cnt = torch.bincount(lab, minlength=n_groups).float()
            ck = torch.zeros(n_groups, k.shape[1]).index_add_(0, lab, k[span]) / cnt.clamp_min(1)[:, None]
            cv = torch.zeros(n_groups, v.shape[1]).index_add_(0, lab, v[span]) / cnt.clamp_min(1)[:, None]
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[1])
            logit = (q @ ck.T) * view.model.scale
            rank = logit.amax(0).masked_fill(cnt == 0, -math.inf).argsort(descending=True)
            live = int((cnt > 0).sum())
            exact, summarised, used = [], [], 0
            for j, c in enumerate(rank.tolist()[:live]):
                size = int(cnt[c])
                left_groups = live - j - 1
                if used + size + len(summarised) + left_groups <= room:
                    exact.append(c)
                    used += size
                else:
                    summarised.append(c)
            take = torch.isin(lab, torch.tensor(exact, dtype=torch.long)) if exact else torch.zeros_like(lab, dtype=torch.bool)
            keep_idx = torch.cat([fixed.nonzero().flatten(), span[take]])
            far_p = torch.stack([p[span[lab == c]].max() for c in summarised]) if summarised else p[:0]
            sel = torch.tensor(summarised, dtype=torch.long)
            kk = torch.cat([k[keep_idx], ck[sel]])
            vv = torch.cat([v[keep_idx], cv[sel]])
            pp = torch.cat([p[keep_idx], far_p])
            o = pp.argsort()
            ks.append(kk[o][:b]); vs.append(vv[o][:b]); ps.append(pp[o][:b])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
