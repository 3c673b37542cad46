"""ArkVale (Chen et al., NeurIPS 2024; no arXiv id): the cache is paged (32 tokens); each filled page gets a
digest, the bounding cuboid of its keys (as in the official code: centre (max+min)/2 +- the mean absolute
deviation from it per channel); a page's importance for the query is the cuboid's upper bound
sum_c max(q_c hi_c, q_c lo_c). At prefill the pages beyond the budget are evicted by this estimate with the
last query, summed over all query heads (the official prefill selection uses one group: the same pages for
every head); the first 2 pages (sinks) and the last 2 (window, incl. the partial one) are always kept.
Recall of evicted pages during decoding is not reproduced (one selection is final).
Settings: pa_arkvale; pa_arkvale?page_size=16; pa_arkvale?sink_pages=0&window_pages=0; pa_arkvale?digest=minmax"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class ArkVale(EvictionMethod):
    name = "pa_arkvale"
    paper: ClassVar[str] = "ArkVale"
    query_window = 1
    page_size = 32
    sink_pages = 2
    window_pages = 2
    digest = "mad"  # official: centre +- mean |k - centre|; "minmax" = the plain bounding box

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h, t, p = view.n_kv_heads, view.n_tokens, self.page_size
        keys = F.pad(view.keys.float(), (0, 0, 0, (-t) % p)).view(h, -1, p, view.keys.shape[-1])
        hi, lo = keys.amax(2), keys.amin(2)  # (padded keys are zero: only the last, always kept, page has any)
        if self.digest == "mad":
            centre = (hi + lo) / 2
            dist = (keys - centre[:, :, None]).abs().mean(2)
            hi, lo = centre + dist, centre - dist
        g = view.model.group_size
        q = view.queries[:, -1].float()[:, None, :]  # (H_q, 1, D)
        bound = torch.maximum(q * hi.repeat_interleave(g, 0), q * lo.repeat_interleave(g, 0)).sum(-1)
        pages = bound.sum(dim=0, keepdim=True).expand(h, -1).clone()  # one selection for all heads
        n = pages.shape[1]
        pages[:, : self.sink_pages] = float("inf")
        pages[:, max(0, n - self.window_pages):] = float("inf")
        return Keep.from_topk(whole_blocks_first(pages, view.positions.float(), p), view.budget, view.valid)
