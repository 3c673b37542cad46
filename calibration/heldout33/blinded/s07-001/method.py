"""Bounded Pages: the question picks fixed pages of the context by an optimistic bound on its dot products."""

import torch

from harness import EvictionMethod, Keep, LayerView


class BoundedPages(EvictionMethod):
    name = "bounded_pages"
    question_queries = True
    page = 16

    def select(self, view: LayerView) -> Keep:
        H, T, D = view.keys.shape
        if view.queries is None or view.budget >= T:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n_pages = -(-T // self.page)
        pad = n_pages * self.page - T
        k = view.keys.float()
        lo = torch.nn.functional.pad(k, (0, 0, 0, pad), value=float("inf")).reshape(H, n_pages, self.page, D).amin(2)
        hi = torch.nn.functional.pad(k, (0, 0, 0, pad), value=float("-inf")).reshape(H, n_pages, self.page, D).amax(2)
        q = view.queries.float().reshape(H, view.model.group_size * view.queries.shape[1], D)
        # per query and channel the larger of q*lo and q*hi, summed: an upper bound on q.k inside the page
        bound = torch.maximum(q[:, :, None, :] * lo[:, None], q[:, :, None, :] * hi[:, None]).sum(-1)
        page_score = bound.amax(dim=1)                                   # (H, pages)
        token_score = page_score.repeat_interleave(self.page, dim=1)[:, :T]
        tie = view.positions.float() / (10.0 * T)                        # later tokens win ties within a page
        return Keep.from_topk(token_score + tie, view.budget, view.valid)
