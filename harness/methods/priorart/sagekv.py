"""SAGE-KV (Wang et al., 2025, arXiv 2503.08879, "LLMs Know What to Drop"): once, after prefill, the cache is split
into sinks, candidates, a recent window and the last token; the last token's query attends over the candidates and
each head keeps its own top-k of them ("token- and head-level" selection), then decoding runs on the reduced cache.
Here a KV head's score is its query heads' last-query attention, averaged (``group_reduce``), the sinks and the recent
window (which holds the last token) always kept. ``flat`` = True reads "head level" as one top-k over all (head,
token) pairs of the layer instead (ragged). n_sink 4 and n_recent 64 are assumptions: the paper's exact sizes were
not verified here. Without queries: recency.
Settings: pa_sagekv; pa_sagekv?group_reduce=max; pa_sagekv?flat=True; pa_sagekv?n_sink=128&n_recent=512
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SAGEKV(EvictionMethod):
    name = "pa_sagekv"
    paper: ClassVar[str] = "SAGE-KV"
    query_window = 1  # the last prompt token's query
    n_sink = 4
    n_recent = 64
    group_reduce = "mean"
    flat = False

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(view.queries[:, -1:])[:, 0]  # (H_q, T)
        scores = view.group(attn, "max" if self.group_reduce == "max" else "mean")
        last = int(view.positions.max())
        keep = (view.positions < self.n_sink) | (view.positions > last - self.n_recent) | (view.positions == last)
        scores = scores.masked_fill(keep, float("inf")).masked_fill(~view.valid_mask(), float("-inf"))
        if not self.flat:
            return Keep.from_topk(scores, view.budget, view.valid)
        h, t = scores.shape
        total = min(view.budget * h, int(view.valid_mask().sum()))
        flat = scores.flatten().topk(total).indices
        return Keep(tuple((flat[flat // t == i] % t).sort().values for i in range(h)))
