"""Folio: keep whole pages, and let every head of a layer bid for pages out of one shared purse.

The context is cut into fixed pages of ``page`` consecutive entries per KV head. Each page is priced by the
attention the one-off re-reading pass pays its entries (summed over the pass's rows and over the query heads that
share the KV head). A layer's budget is one purse for all its heads: the highest-priced (head, page) pairs win,
so a head whose attention is spread over many pages ends up holding more of them than a head that looks at a few.
Each head always keeps its opening page and its closing page.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Folio(EvictionMethod):
    name = "folio"
    reconstruction_queries = True
    page = 16
    work_cap = 1 << 21      # bound on rows x entries for one census

    def _census(self, view: LayerView) -> torch.Tensor:
        rows = 0 if view.queries is None else int(view.queries.shape[1])
        if rows == 0 or rows * view.n_tokens > self.work_cap:
            return view.positions.float()                        # page order only
        paid = view.attention(reduce="sum")                        # (H_q, T), never rows x T at once
        return view.group(paid, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        price = self._census(view).masked_fill(~valid, 0.0)
        h, t = price.shape
        size = min(self.page, max(1, view.budget // 4))            # a purse smaller than four pages buys smaller pages
        n_pages = -(-t // size)
        padded = F.pad(price, (0, n_pages * size - t))
        page_price = padded.view(h, n_pages, size).sum(dim=-1)                 # (H_kv, pages)
        filled = F.pad(valid.float(), (0, n_pages * size - t)).view(h, n_pages, size).sum(dim=-1)
        page_price = page_price.masked_fill(filled == 0, float("-inf"))
        last_page = ((valid.sum(dim=1) - 1).clamp_min(0) // size).long()
        page_price[:, 0] = float("inf")
        page_price[torch.arange(h), last_page] = float("inf")

        purse = view.budget * h
        order = page_price.flatten().argsort(descending=True)
        cost = filled.flatten()[order]
        affordable = order[torch.cumsum(cost, 0) <= purse]
        won = torch.zeros(h * n_pages, dtype=torch.bool)
        won[affordable] = True
        won = won.view(h, n_pages).repeat_interleave(size, dim=1)[:, :t] & valid
        return Keep(tuple(torch.nonzero(won[i]).flatten() for i in range(h)))
