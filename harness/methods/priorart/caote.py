"""CAOTE (Goel et al., 2025, arXiv 2504.14051): a token's score is how much the attention output would move if it
were evicted: with attention a (summing to 1) and output o = sum_i a_i v_i, dropping j and renormalising moves o by
a_j / (1 - a_j) * ||v_j - o||; the tokens that would move it most are kept. CAOTE is a meta-score over a base
method's attention; the base here is SnapKV's observation window (the last ``query_window`` queries, their attention
averaged per query head, so it sums to 1; the window always kept), ``query_window`` 1 gives the TOVA base (last
query). Computed per query head with its own o, then averaged over the KV head's query heads. Without queries: recency.
Settings: pa_caote; pa_caote?query_window=1; pa_caote?query_window=64
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class CAOTE(EvictionMethod):
    name = "pa_caote"
    paper: ClassVar[str] = "CAOTE"
    query_window = 32  # SnapKV base's window

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        a = view.attention(reduce="mean")  # (H_q, T), each row sums to 1
        v = view.values.float().repeat_interleave(view.model.group_size, dim=0)  # (H_q, T, D)
        o = torch.einsum("ht,htd->hd", a, v)
        err = a / (1 - a).clamp_min(1e-6) * (v - o[:, None]).norm(dim=-1)
        scores = view.group(err, "mean")
        window = view.positions >= view.query_positions.min()
        return Keep.from_topk(scores.masked_fill(window, float("inf")), view.budget, view.valid)
