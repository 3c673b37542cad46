"""Scissorhands (Liu et al., 2023, NeurIPS, arXiv 2305.17118), "persistence of importance": over a history window
of the latest queries, count for each cached token how often its attention is above the average (1/t, t = keys the
query sees: a "pivotal" token); tokens counted least often are dropped, the ``recent`` latest tokens always stay.
The paper counts the complement (how often a token is *below* 1/t) and drops the largest counts; every history
query sees every context token, so both rank the context alike. Per KV head: counts summed over its query heads.
Ties (counts are integers) go to the more recent token. Defaults w = 400, r = 10 as recalled from the paper's
setup (OPT experiments; unverified here). Without queries: recency.
Settings: pa_scissorhands; pa_scissorhands?query_window=32; pa_scissorhands?query_window=128&recent=32
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Scissorhands(EvictionMethod):
    name = "pa_scissorhands"
    paper: ClassVar[str] = "Scissorhands"
    query_window = 400  # history window w
    recent = 10  # recent window r, always kept

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        attn = view.attention()  # (H_q, N, T), causal
        seen = (view.positions[:1, None, :] <= view.query_positions[None, :, None]).sum(-1).clamp_min(1)  # (1, N)
        pivotal = (attn > 1.0 / seen[..., None]).sum(dim=1).float()  # (H_q, T)
        counts = view.group(pivotal, "sum")
        t = view.n_tokens
        scores = counts + view.positions.float() / (t + 1)  # recency breaks ties only
        scores = scores.masked_fill(view.positions > int(view.positions.max()) - self.recent, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
