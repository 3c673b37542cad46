"""Quest page selection, ported to one-shot eviction (board A).

Port of Quest (Tang, Zhao, Zhu, Xiao, Kasikci, Han: "Quest: Query-Aware Sparsity for Efficient Long-Context LLM
Inference", ICML 2024, arXiv 2406.10774). Quest cuts the cache into pages, stores the channel-wise minimum and
maximum of each page's keys, and for a query q bounds the largest logit in a page by sum_c max(q_c * max_c,
q_c * min_c); the pages with the highest bounds are loaded for that query. Nothing of the idea is ours.

What this port changes, because the harness evicts once after prefill instead of choosing pages per decoding
step: the bounds are computed for the question's rows (board A puts the question in the prefill); each row's
bounds (times the softmax scale) are turned into a softmax over pages and summed over the rows and the query heads
of the KV head; the pages with the largest sums are kept whole, in order, until the budget is spent, and the
pages not chosen are evicted rather than left in memory. The question's own tokens are always kept, and a page
that only partly fits contributes its newest tokens. Page size 16, as in the paper's default.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class QuestPages(EvictionMethod):
    name = "quest_pages"
    question_queries = True
    page = 16

    def page_scores(self, view: LayerView) -> torch.Tensor:
        """(H_kv, P): softmax over page bounds, summed over question rows and the KV head's query heads."""
        assert view.queries is not None
        h, t, d = view.keys.shape
        p = self.page
        n_pages = -(-t // p)
        k = view.keys.float()
        valid = view.valid_mask()
        big = torch.finfo(torch.float32).max
        hi = F.pad(k.masked_fill(~valid[..., None], -big), (0, 0, 0, n_pages * p - t), value=-big)
        lo = F.pad(k.masked_fill(~valid[..., None], big), (0, 0, 0, n_pages * p - t), value=big)
        kmax = hi.view(h, n_pages, p, d).amax(dim=2)  # (H_kv, P, D)
        kmin = lo.view(h, n_pages, p, d).amin(dim=2)
        empty = ~F.pad(valid, (0, n_pages * p - t), value=False).view(h, n_pages, p).any(dim=2)
        g = view.model.group_size
        q = view.queries.float().view(h, g, -1, d)  # (H_kv, G, N, D)
        bound = torch.maximum(q[:, :, :, None, :] * kmax[:, None, None], q[:, :, :, None, :] * kmin[:, None, None])
        bound = bound.sum(dim=-1) * view.model.scale  # (H_kv, G, N, P)
        bound = bound.masked_fill(empty[:, None, None, :], float("-inf"))
        return bound.softmax(dim=-1).sum(dim=(1, 2))

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = self.page_scores(view)
        valid = view.valid_mask()
        question = (view.positions >= view.query_positions.min()) & valid
        p = self.page
        kept = []
        for i in range(view.n_kv_heads):
            real = torch.nonzero(valid[i]).flatten()
            budget = min(view.budget, real.numel())
            must = torch.nonzero(question[i]).flatten()[-budget:] if budget else real[:0]
            taken = torch.zeros(t, dtype=torch.bool, device=real.device)
            taken[must] = True
            room = budget - must.numel()
            for pg in scores[i].argsort(descending=True).tolist():
                if room <= 0:
                    break
                members = torch.arange(pg * p, min(t, pg * p + p), device=real.device)
                members = members[valid[i][members] & ~taken[members]]
                members = members[-room:] if members.numel() > room else members
                taken[members] = True
                room -= members.numel()
            kept.append(torch.nonzero(taken).flatten())
        return Keep(tuple(kept))
