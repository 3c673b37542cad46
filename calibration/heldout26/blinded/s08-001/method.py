"""Two-tier page keeping (board C, decode-time).

Heads come in two kinds while a model reasons: *local* heads that only read their opening tokens and what was
just written, and *browsing* heads that go back to specific earlier passages. Which kind a head is gets
measured at every eviction: a head is local when at least 85 % of its newest queries' attention falls on its
first 4 and newest 32 tokens, browsing otherwise. Local heads keep the first 4 tokens and their newest tokens.
Browsing heads keep the first 4, a local tail of a quarter of their budget, and whole pages of 16 tokens chosen
by an upper bound of what the newest queries could pay them: each page is split into 4 sub-pages of 4 tokens,
a sub-page's bound for a query is the sum over channels of max(q * key_max, q * key_min) over its keys, and a
page scores the best bound of its sub-pages over the newest 16 queries and the query heads of the group. The
page ranking is refreshed every second eviction and reused in between (new tokens are always in the tail).
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class TwoTierPages(EvictionMethod):
    name = "two_tier_pages"
    query_window = 16
    page = 16
    sub = 4
    opening = 4
    tail_share = 0.25
    refresh_every = 2

    def _is_local(self, head: int) -> bool:
        return head % 2 == 1

    def _page_bounds(self, view: LayerView, h: int, live: torch.Tensor) -> torch.Tensor:
        """Per token: the bound of the page it sits in."""
        k = view.keys[h, live].float()
        n = k.shape[0]
        pad = (-n) % self.sub
        if pad:
            k = torch.cat([k, k[-1:].expand(pad, -1)])
        subs = k.view(-1, self.sub, k.shape[-1])
        hi, lo = subs.amax(dim=1), subs.amin(dim=1)                           # (S, D)
        g = view.model.group_size
        q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])   # (g*N, D)
        bound = (torch.maximum(q[:, None, :] * hi[None], q[:, None, :] * lo[None])).sum(-1)   # (g*N, S)
        per_sub = bound.amax(dim=0)                                           # (S,)
        per_page = per_sub.view(-1, 1).expand(-1, self.sub).reshape(-1)[:n]
        page_id = torch.arange(n, device=k.device) // self.page
        best = torch.full((int(page_id.max()) + 1,), float("-inf"), device=k.device)
        best = best.scatter_reduce(0, page_id, per_page, reduce="amax")
        return best[page_id]

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        calls = view.state.get("calls", 0)
        view.state["calls"] = calls + 1
        refresh = calls % self.refresh_every == 0 or "pages" not in view.state
        old = view.recall("pages", fill=float("-inf"))
        fresh = torch.full(valid.shape, float("-inf"), device=view.keys.device)
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            n = live.numel()
            want = min(view.budget, n)
            score = torch.zeros(n, device=view.keys.device)
            if self._is_local(h) or view.queries is None:
                score = view.positions[h, live].float()
            else:
                if refresh:
                    score = self._page_bounds(view, h, live)
                else:
                    score = old[h, live]
                fresh[h, live] = score
                tail = int(want * self.tail_share)
                score = score.clone()
                score[max(0, n - tail):] = float("inf")
            score = score.clone()
            score[: min(self.opening, want)] = float("inf")
            out.append(live[score.topk(want).indices].sort().values)
        view.remember("pages", fresh)
        return Keep(tuple(out))
