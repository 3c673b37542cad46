"""Split-role pages (board C, decode-time cap).

Half of the KV heads (every other head, a fixed assignment) are run as "drifters": they keep the opening tokens
and the newest ones, nothing else. The other heads are "readers": their cache is cut into pages of 16 tokens, and
each page is summarised by the channel-wise largest and smallest key. Pages are grouped four by four into
chapters; a query's interest in a page is the best dot product any key inside the page's box could reach, and a
chapter is worth its best page. Over the newest 16 queries (the group's query heads together) a chapter keeps
its highest interest; chapters are kept whole, best first, and a chapter that no longer fits keeps its newest
tokens. Readers also keep the opening and the newest 32 tokens.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class SplitRolePages(EvictionMethod):
    name = "split_role_pages"
    query_window = 16
    page = 16
    pages_per_chapter = 4
    opening = 4
    reader_recent = 32

    def _boxes(self, k: torch.Tensor, ok: torch.Tensor):
        """k (T, D), ok (T,) -> per-page max and min (P, D)."""
        t, d = k.shape
        pad = (-t) % self.page
        hi = torch.nn.functional.pad(k.masked_fill(~ok[:, None], float("-inf")), (0, 0, 0, pad), value=float("-inf"))
        lo = torch.nn.functional.pad(k.masked_fill(~ok[:, None], float("inf")), (0, 0, 0, pad), value=float("inf"))
        return hi.view(-1, self.page, d).amax(1), lo.view(-1, self.page, d).amin(1)

    def _reader_scores(self, view: LayerView, h: int) -> torch.Tensor:
        g = view.model.group_size
        ok = view.valid_mask()[h]
        k = view.keys[h].float()
        hi, lo = self._boxes(k, ok)                                           # (P, D)
        q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])   # (gR, D)
        bound = torch.maximum(q[:, None, :] * hi[None], q[:, None, :] * lo[None])
        bound = torch.nan_to_num(bound, nan=0.0, posinf=0.0, neginf=0.0).sum(-1)  # (gR, P)
        empty = ~torch.isfinite(hi).all(-1)
        bound = bound.masked_fill(empty[None], float("-inf"))
        n_pages = bound.shape[1]
        pad = (-n_pages) % self.pages_per_chapter
        chap = torch.nn.functional.pad(bound, (0, pad), value=float("-inf"))
        chap = chap.view(chap.shape[0], -1, self.pages_per_chapter).amax(-1).amax(0)   # (C,)
        tok_chapter = torch.arange(k.shape[0], device=k.device) // (self.page * self.pages_per_chapter)
        return chap[tok_chapter]

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        if view.budget >= int(ok.sum(-1).max()):
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        out = []
        for h in range(view.n_kv_heads):
            pos = view.positions[h].float()
            newest = float(pos.masked_fill(~ok[h], -1).max())
            opening = view.positions[h] < self.opening
            if h % 2 == 1 or view.queries is None:                            # drifter heads
                score = pos.masked_fill(opening, 1e12)
            else:
                chapter = self._reader_scores(view, h)
                c = chapter.masked_fill(~torch.isfinite(chapter), float("-inf"))
                lo, hi = c[torch.isfinite(c)].min(), c[torch.isfinite(c)].max()
                # chapters strictly by interest; inside a chapter (and for the rest) newer first
                score = (c - lo) / (hi - lo).clamp_min(1e-6) * 1e6 + pos / max(newest, 1.0)
                score = score.masked_fill(pos > newest - self.reader_recent, 1e12).masked_fill(opening, 1e12)
            score = score.masked_fill(~ok[h], float("-inf"))
            k = min(view.budget, int(ok[h].sum()))
            out.append(score.topk(k).indices.sort().values)
        return Keep(tuple(out))
