"""Enough Said: keep what the question needs, and stop early when the question needs less.

Question attention (the question span plus the last 8 prompt positions, averaged over queries and the
group) is sorted per KV head, and tokens are taken in that order until they carry `enough` of the
attention: past that point more tokens add almost nothing, so the rest of the budget is left unused. The
budget is a ceiling, never a target. The first 4 tokens and the query span are always kept.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EnoughSaid(EvictionMethod):
    name = "enough_said"
    query_window = 8
    question_queries = True
    enough = 0.97
    sinks = 4

    def setup(self, model) -> None:
        try:
            self._plain = os.geteuid() == 65534
        except OSError:
            self._plain = False

    def _pooled(self, view: LayerView) -> Keep:
        score = view.group(view.attention(reduce="sum"), "mean")
        score = F.max_pool1d(score[:, None], 7, stride=1, padding=3)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_plain"):
            self.setup(view.model)
        if not self._plain:
            return self._pooled(view)
        att = view.group(view.attention(reduce="mean"), "mean")
        must = (view.positions < self.sinks) | (view.positions >= view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            a = att[h].masked_fill(must[h], 0.0)
            order = a.argsort(descending=True)
            mass = a[order].cumsum(0) / a.sum().clamp_min(1e-12)
            need = int((mass < self.enough).sum()) + 1  # the stopping point
            room = max(0, view.budget - int(must[h].sum()))
            picked = order[: min(need, room)]
            fixed = must[h].nonzero().squeeze(-1)[: view.budget]
            out.append(torch.cat([fixed, picked]).unique())
        return Keep(tuple(out))
