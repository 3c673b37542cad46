"""Peak-and-support retention (board B_offline, with the reconstruction pass).

KVzip keeps the KV pairs that receive the largest attention while the model repeats the context. A token that one
repeat query looks at sharply ranks as high as a token that many repeat queries use steadily; for answering varied
later questions the second kind is at least as valuable. Peak-and-support ranks each token by the average of two
per-head ranks: its peak (max) attention over the repeat pass, as in KVzip, and its support (mean attention over the
same pass). The first 4 tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _rank01(x: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    """Per-row rank in [0, 1] among live entries (dead entries get -1)."""
    x = x.masked_fill(~live, float("-inf"))
    order = x.argsort(dim=1)
    r = torch.empty_like(x)
    ar = torch.arange(x.shape[1], device=x.device, dtype=x.dtype).expand_as(x)
    r.scatter_(1, order, ar)
    n_dead = (~live).sum(dim=1, keepdim=True).to(x.dtype)
    n_live = live.sum(dim=1, keepdim=True).clamp_min(2).to(x.dtype)
    return ((r - n_dead) / (n_live - 1)).masked_fill(~live, -1.0)


class PeakAndSupport(EvictionMethod):
    name = "peak_support"
    reconstruction_queries = True
    anchors = 4

    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask()
        if view.queries is None:            # no reconstruction pass outside board B_offline: opening + newest
            return Keep.from_topk(view.positions.float().masked_fill(view.positions < self.anchors, 1e9),
                                  view.budget, view.valid)
        peak = view.group(view.attention(reduce="max"), "max")
        support = view.group(view.attention(reduce="mean"), "mean")
        score = 0.5 * (_rank01(peak, live) + _rank01(support, live))
        score[:, : self.anchors] = 2.0
        return Keep.from_topk(score, view.budget, view.valid)
