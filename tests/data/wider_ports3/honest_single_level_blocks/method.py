"""Page picker: the cache cut into pages of 32, each page summed up by its mean key; the newest query keeps the pages
that fit it best, whole."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PagePicker(EvictionMethod):
    name = "page_picker"
    query_window = 1
    page = 32

    def select(self, view: LayerView) -> Keep:
        h, n, d = view.keys.shape
        pad = (-n) % self.page
        k = torch.nn.functional.pad(view.keys.float(), (0, 0, 0, pad))
        means = k.reshape(h, (n + pad) // self.page, self.page, d).mean(dim=2)
        q = view.group(view.queries.float(), "mean")[:, -1]
        fit = torch.einsum("hd,hpd->hp", q, means)
        score = fit.repeat_interleave(self.page, dim=1)[:, :n]
        return Keep.from_topk(score, view.budget, view.valid)
