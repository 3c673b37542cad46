"""Quest (Tang et al., ICML 2024, arXiv 2406.10774): keys are cut into pages of 16 tokens, each summarised by
its channel-wise min and max; a page's criticality for the current query q is the upper bound
sum_c max(q_c min_c, q_c max_c) of q.k over the page; the top pages (token budget / page size) are kept, and
the page holding the current token always. Per query head in the paper (MHA models); for GQA a KV head keeps
what its query heads' largest bound asks (max over the group). The query is the last prompt query. Quest
selects pages anew for every query and evicts nothing; here one selection is final. Quest's dense first two
layers are not reproduced (uniform budget). Remainder under one page: best tokens of the next page by position.
Settings: pa_quest; pa_quest?page_size=32; pa_quest?page_size=8; pa_quest?group_reduce=mean"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class Quest(EvictionMethod):
    name = "pa_quest"
    paper: ClassVar[str] = "Quest"
    query_window = 1
    page_size = 16
    group_reduce = "max"

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h, t, p = view.n_kv_heads, view.n_tokens, self.page_size
        valid = view.valid_mask()[..., None]
        keys = view.keys.float()
        pad = (-t) % p
        kmax = F.pad(keys.masked_fill(~valid, float("-inf")), (0, 0, 0, pad), value=float("-inf"))
        kmin = F.pad(keys.masked_fill(~valid, float("inf")), (0, 0, 0, pad), value=float("inf"))
        kmax, kmin = kmax.view(h, -1, p, keys.shape[-1]).amax(2), kmin.view(h, -1, p, keys.shape[-1]).amin(2)
        g = view.model.group_size
        q = view.queries[:, -1].float()[:, None, :]  # (H_q, 1, D)
        bound = torch.maximum(q * kmin.repeat_interleave(g, 0), q * kmax.repeat_interleave(g, 0))
        pages = view.group(bound.nan_to_num(0.0, posinf=0.0, neginf=0.0).sum(-1), self.group_reduce)  # type: ignore[arg-type]
        newest = view.positions.masked_fill(~view.valid_mask(), -1).argmax(dim=1)
        pages.scatter_(1, (newest // p)[:, None], float("inf"))  # the current page
        return Keep.from_topk(whole_blocks_first(pages, view.positions.float(), p), view.budget, view.valid)
