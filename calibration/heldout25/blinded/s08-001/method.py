"""Rolling shortlist (board A, question-aware prefill).

A reader with a question in mind skims a long document page by page and keeps a short list of what looked
relevant so far; each new page competes only with the current list, not with the whole document. Rolling
shortlist does the same with the cache: the context is walked in pages, the question rows attend over
"shortlist + new page" only, and the best entries of that union become the new shortlist.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


def _union_scores(qh: torch.Tensor, keys: torch.Tensor, scale: float) -> torch.Tensor:
    """Question rows (G, N, D) over a candidate set of keys (C, D): attention summed over rows and heads (C,)."""
    logits = torch.einsum("gnd,cd->gnc", qh, keys) * scale
    return torch.softmax(logits, dim=-1).sum(dim=(0, 1))


class RollingShortlist(EvictionMethod):
    name = "rolling_shortlist"
    question_queries = True
    query_window = 8
    page = 128

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        q = view.queries.float()
        first_q = int(view.query_positions.min())
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            pos = view.positions[h, idx]
            ctx = idx[pos < first_q]
            tail = idx[pos >= first_q]                      # the question and the window: the reader's prompt
            room = max(0, view.budget - tail.numel())
            if room == 0:
                out.append(idx[pos.argsort(descending=True)[: view.budget]].sort().values)
                continue
            qh = q[h * g:(h + 1) * g]
            k = view.keys[h].float()
            shortlist = ctx[:0]
            for start in range(0, ctx.numel(), self.page):
                cand = torch.cat([shortlist, ctx[start:start + self.page]])
                s = _union_scores(qh, k[cand], view.model.scale)
                shortlist = cand[s.topk(min(room, cand.numel())).indices]
            out.append(torch.cat([shortlist, tail]).sort().values)
        return Keep(tuple(out))
