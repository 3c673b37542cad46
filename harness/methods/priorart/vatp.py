"""VATP (Guo, Kamigaito, Watanabe, 2024, arXiv 2406.12335, "Value Also Matters"): a token's importance is its
accumulated attention score times the L1 norm of its value vector. Built here on H2O (the paper's main variant):
attention received from every prompt query, summed over the KV head's query heads, times ||v||_1; as in H2O,
``recent_share`` of the budget goes to the latest tokens. ``n_sink`` (default 0) protects the first tokens, whose small
value norms are what VATP demotes. Without queries: recency.
Settings: pa_vatp; pa_vatp?n_sink=1; pa_vatp?recent_share=0.0; pa_vatp?query_window=32
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class VATP(EvictionMethod):
    name = "pa_vatp"
    paper: ClassVar[str] = "VATP"
    query_window = 1 << 20  # every prompt query (H2O's accumulation)
    recent_share = 0.5
    n_sink = 0

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        acc = view.group(view.attention(reduce="sum"), "sum")  # (H_kv, T)
        scores = acc * view.values.float().abs().sum(dim=-1)
        recent = int(view.budget * self.recent_share)
        last = int(view.positions.max())
        keep = (view.positions > last - recent) | (view.positions < self.n_sink)
        return Keep.from_topk(scores.masked_fill(keep, float("inf")), view.budget, view.valid)
