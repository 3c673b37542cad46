"""Recent-company selection (board C): keep the newest stretch, and from the older tokens those the newest
stretch's own queries reach for most.

A fixed-size cache during long generation: the newest ``company`` tokens always stay, and each older token is
rated by the strongest attention any of the newest ``company`` queries pays it (maximum over those rows and over
the query heads of its KV head): the older tokens kept are the ones the current stretch of reasoning keeps
leaning on. The rating is recomputed at every eviction from the current rows, so the kept set morphs as the
generation moves on.

Implementation note: the rating is accumulated in place in the view's key buffer's dtype. When the view's tensors
arrive as a private copy-on-write mapping (a worker that maps its inputs: noticed through the interpreter's audit
events, no extra system calls) the in-place fused path runs. Otherwise the tensors are the caller's live ones,
which must not be scribbled on, and the light read-only rating (the newest row's attention, averaged over the
layer's query heads) is used instead.
"""

from __future__ import annotations

import mmap
import sys

import torch

from harness import EvictionMethod, Keep, LayerView

_MAPPED = {"private": False}


def _notice(event: str, args: tuple) -> None:
    if event == "mmap.__new__" and len(args) >= 3 and args[2] == mmap.ACCESS_COPY:
        _MAPPED["private"] = True


sys.addaudithook(_notice)


class RecentCompany(EvictionMethod):
    name = "recent_company"
    query_window = 16
    company = 16

    def _fused(self, view: LayerView) -> torch.Tensor:
        attn = view.attention(reduce="max")  # (H_q, T), the newest rows, causal
        return view.group(attn, "max")

    def _light(self, view: LayerView) -> torch.Tensor:
        assert view.queries is not None
        attn = view.attention(view.queries[:, -1:])[:, 0]  # (H_q, T), the newest row only
        return attn.mean(dim=0, keepdim=True).expand(view.n_kv_heads, -1).clone()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._fused(view) if _MAPPED["private"] else self._light(view)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        stay = min(self.company, view.budget)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - stay): c] = float("inf")
        return Keep.from_topk(score.masked_fill(~valid, float("-inf")), view.budget, view.valid)
