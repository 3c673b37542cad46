"""Shelved pages (board C, decode-time).

The trace is shelved in pages of consecutive tokens. Each page is labelled by a couple of its own tokens,
the ones the decode steps have attended to most since they arrived; a page is worth what the newest queries
make of its labels (their plain dot products, averaged over the queries, best label per page). When the
layer fills up, the opening tokens and the newest stretch stay, and the rest of the room goes to whole pages,
best first; the last page that does not fit is cut by its tokens' own attention.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class ShelvedPages(EvictionMethod):
    name = "shelved_pages"
    query_window = 48
    page = 8
    labels = 2
    opening = 4
    newest_share = 0.25

    def _received(self, view: LayerView) -> torch.Tensor:
        got = view.recall("received")
        if view.queries is not None:
            got = got + view.group(view.attention(reduce="sum"), "sum")
        view.remember("received", got)
        return got

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        received = self._received(view)
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            n = idx.numel()
            b = min(view.budget, n)
            if b >= n:
                out.append(idx)
                continue
            a = min(self.opening, b)
            newest = min(max(1, int(self.newest_share * b)), b - a)
            mid = idx[a:n - newest]
            room = b - a - newest
            if room <= 0 or view.queries is None:
                chosen = mid[mid.numel() - room:] if room > 0 else mid[:0]
            else:
                keys = view.keys[h, mid].float()
                n_pages = -(-mid.numel() // self.page)
                page_of = torch.arange(mid.numel(), device=keys.device) // self.page
                rec = received[h, mid]
                # labels: the most-attended tokens of each page
                label_score = torch.full((n_pages, self.page), float("-inf"), device=keys.device)
                label_score.view(-1)[: mid.numel()] = rec
                lab = label_score.topk(min(self.labels, self.page), dim=1).indices + \
                    torch.arange(n_pages, device=keys.device)[:, None] * self.page
                lab = lab.clamp(max=mid.numel() - 1)
                q = view.queries[h * g:(h + 1) * g].float().reshape(-1, keys.shape[-1])
                dots = (keys[lab.flatten()] @ q.T).mean(-1).view(n_pages, -1)
                page_worth = dots.amax(-1)
                order = page_worth.argsort(descending=True)
                pos_in_order = torch.empty_like(order)
                pos_in_order[order] = torch.arange(n_pages, device=order.device)
                tok = -pos_in_order[page_of].float() * 1e4 + rec / rec.abs().max().clamp_min(1e-9)
                chosen = mid[tok.topk(room).indices]
            out.append(torch.cat([idx[:a], chosen, idx[n - newest:]]).sort().values)
        return Keep(tuple(out))
