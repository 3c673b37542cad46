"""CORM (Dai et al., 2024, arXiv 2404.15949, "Cache Optimization with Recent Message"): adjacent queries are
similar, so a key is still needed if some recent query attends to it above a bar, a fraction of the average
attention 1/t (t = keys that query sees); the recent tokens themselves are always kept. CORM is budget-free (the
bar decides how much stays); under the harness's budget the keys are ranked by how far they clear the bar, i.e. the
maximum over the window's queries (and the KV head's query heads) of attention x t. The window size 32 is an
assumption (the paper's recent-window setting was not verified here). Without queries: recency.
Settings: pa_corm; pa_corm?query_window=16; pa_corm?query_window=64; pa_corm?query_window=128
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class CORM(EvictionMethod):
    name = "pa_corm"
    paper: ClassVar[str] = "CORM"
    query_window = 32  # the recent queries (and recent tokens, always kept)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        attn = view.attention()  # (H_q, N, T), causal
        seen = (view.positions[:1, None, :] <= view.query_positions[None, :, None]).sum(-1).clamp_min(1)  # (1, N)
        ratio = (attn * seen[..., None].float()).amax(dim=1)  # attention / (1/t), best recent query
        scores = view.group(ratio, "max")
        window = view.positions >= view.query_positions.min()
        return Keep.from_topk(scores.masked_fill(window, float("inf")), view.budget, view.valid)
