"""MorphKV (Ghadia et al., ICML 2025, arXiv 2503.00979, "Dialogue without limits: constant-sized KV caches for
extended responses in LLMs"): a constant-size cache of the recent window plus the older tokens the window's queries
attend to most, refreshed as the window moves. The official patch (ghadiaravi13/MorphKV, patch_llama
``morphkv_mask``), read at the prompt's end: the window is the last ``query_window - 1`` queries before the newest
token; with GQA their logits (q k^T / sqrt(d)) are summed over the KV head's query heads *before* the softmax, the
softmax runs over the older keys only (the window and the newest token excluded), and the window's rows are fused
by their maximum (``fusion`` "max": max_fused, the scripts' default) or their sum (sum_fused); the top
``budget - query_window`` older tokens are kept with the window and the newest token. Defaults: window 32 (the
LongWriter/LongBench runs; LongGenBench used 200), max_fused. Without queries: recency.
Settings: pa_morphkv; pa_morphkv?fusion=sum; pa_morphkv?query_window=201; pa_morphkv?query_window=9&fusion=sum
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class MorphKV(EvictionMethod):
    name = "pa_morphkv"
    paper: ClassVar[str] = "MorphKV"
    query_window = 33  # the window (32) and the newest token
    fusion = "max"  # max_fused; "sum": sum_fused

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens \
                or view.queries.shape[1] < 2:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries[:, :-1].float()  # the window, the newest token's query left out
        hq, w, d = q.shape
        h_kv, g = view.n_kv_heads, view.model.group_size
        logits = torch.matmul(q.reshape(h_kv, g * w, d), view.keys.float().transpose(1, 2)).view(h_kv, g, w, -1)
        logits = logits.sum(dim=1) * view.model.scale  # (H_kv, w, T): summed over the group before the softmax
        older = view.positions < view.query_positions[0]  # before the window (and the newest token)
        older = older & view.valid_mask()
        probs = logits.masked_fill(~older[:, None, :], float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        scores = probs.amax(dim=1) if self.fusion == "max" else probs.sum(dim=1)
        scores = scores.masked_fill(~older & view.valid_mask(), float("inf"))  # the window and the newest token
        return Keep.from_topk(scores, view.budget, view.valid)
