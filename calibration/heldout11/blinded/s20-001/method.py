"""Stratified quota retention (board B_online).

On board B the questions come after compression, and the context's closing rows (the only queries available)
are a biased witness: they read the end of the context and a few loud spots, and a global top-k follows them
everywhere. We spread the budget instead. The context before the window is cut into ``strata`` equal spans; each
span gets a quota proportional to the square root of the window attention mass it receives (at least one token
per span, largest-remainder rounding), and inside a span tokens are ranked by their own window attention. The
square root keeps loud spans ahead while leaving quiet ones a voice.

Window attention is SnapKV's (Li et al., 2024, arXiv 2404.14469): the last 32 context rows, summed, averaged over
each KV head's query heads, max-pooled (7). The window rows and the four opening tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class StratifiedQuota(EvictionMethod):
    name = "stratified_quota"
    query_window = 32
    strata = 8
    opening = 4

    def _quotas(self, mass: torch.Tensor, total: int) -> list[int]:
        weight = mass.clamp_min(0).sqrt()
        n = weight.numel()
        if total <= n:
            return [1 if i in set(weight.topk(total).indices.tolist()) else 0 for i in range(n)]
        share = weight / weight.sum().clamp_min(1e-12) * (total - n)
        base = share.floor().long() + 1
        rem = total - int(base.sum())
        if rem > 0:
            base[(share - share.floor()).topk(rem).indices] += 1
        return base.tolist()

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.max_pool1d(att[:, None], 7, stride=1, padding=3)[:, 0]
        fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.opening)
        out = []
        for h in range(view.n_kv_heads):
            keep = fixed[h].clone()
            if int(keep.sum()) >= b:
                out.append(keep.nonzero().flatten()[-b:])
                continue
            free = (~keep).nonzero().flatten()
            spans = torch.tensor_split(free, min(self.strata, free.numel()))
            quotas = self._quotas(torch.stack([att[h, s].sum() for s in spans]), b - int(keep.sum()))
            for s, k in zip(spans, quotas):
                k = min(k, s.numel())
                if k:
                    keep[s[att[h, s].topk(k).indices]] = True
            spare = b - int(keep.sum())  # quotas above a span's size leave a few slots: best remaining tokens
            if spare > 0:
                rest = (~keep).nonzero().flatten()
                keep[rest[att[h, rest].topk(min(spare, rest.numel())).indices]] = True
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
