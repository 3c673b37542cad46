"""Envelope paging (board A): cut the context into fixed pages, summarise each page by a per-channel box, and
keep the pages whose box could give the question the largest match."""

import torch

from harness import EvictionMethod, Keep, LayerView


class EnvelopePaging(EvictionMethod):
    name = "envelope_paging"
    question_queries = True
    query_window = 1
    page = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        live = view.valid_mask()
        n_pages = -(-t // self.page)
        padded = n_pages * self.page
        k = view.keys.float()
        hi = k.masked_fill(~live[..., None], -1e4)
        lo = k.masked_fill(~live[..., None], 1e4)
        if padded > t:
            fill = padded - t
            hi = torch.cat([hi, hi.new_full((h_kv, fill, d), -1e4)], dim=1)
            lo = torch.cat([lo, lo.new_full((h_kv, fill, d), 1e4)], dim=1)
        top = hi.view(h_kv, n_pages, self.page, d).amax(dim=2)        # (H_kv, P, D)
        bottom = lo.view(h_kv, n_pages, self.page, d).amin(dim=2)
        empty = top[..., 0] < -1e3                                    # pages with no real entry
        q = view.queries.float().view(h_kv, g, -1, d)                 # (H_kv, g, N, D)
        # optimistic match: per channel, whichever corner of the box agrees more with the query
        reach = torch.maximum(torch.einsum("hgnd,hpd->hgnpd", q, top),
                              torch.einsum("hgnd,hpd->hgnpd", q, bottom)).sum(-1)
        reach = reach * view.model.scale
        reach = reach.masked_fill(empty[:, None, None, :], float("-inf"))
        share = torch.softmax(reach, dim=-1).nan_to_num(0.0).sum(dim=(1, 2))   # (H_kv, P)
        # the page holding the newest entries is always read
        last_page = ((live.sum(dim=1) - 1).clamp_min(0) // self.page)
        share[torch.arange(h_kv), last_page] = float("inf")
        token = share.repeat_interleave(self.page, dim=1)[:, :t].clone()
        # within a page, later entries first when the page only partly fits
        token = token + view.positions.float() / (1e6 * max(1, int(view.positions.max()) + 1))
        return Keep.from_topk(token, view.budget, view.valid)
