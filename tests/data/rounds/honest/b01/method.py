"""Hedged selection: half SnapKV, half K-norm (board A, question in the prefill).

SnapKV's window attention is a strong reader when the question is visible, but it is one reader: when the question
attends to the wrong span the whole budget follows it. We hedge: half of each head's budget goes to the SnapKV
choice (attention of the question span and the closing window, summed over rows, mean over the KV head's query
heads, max-pooled over 7), the other half to the keys with the smallest L2 norm among the tokens not already chosen
(K-norm's query-free signal). The two halves never overlap, so the budget is spent exactly.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) and K-norm (Devoto et al., 2024, arXiv 2406.11430). The
hedge (a fixed split between two existing scores, deduplicated) is our change, and a small one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class HedgedSnapNorm(EvictionMethod):
    name = "hedged_snap_norm"
    query_window = 32
    question_queries = True
    kernel = 7
    snap_share = 0.5

    def _snap(self, view: LayerView) -> torch.Tensor:
        attn = view.attention(reduce="sum")  # (H_q, T), causal
        s = view.group(attn, "mean")
        s = F.max_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        return s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        snap = self._snap(view).masked_fill(~valid, float("-inf"))
        low_norm = (-view.keys.float().norm(dim=-1)).masked_fill(~valid, float("-inf"))
        kept = []
        for h in range(view.n_kv_heads):
            k = min(view.budget, int(valid[h].sum()))
            k_snap = k - int(k * (1 - self.snap_share))
            first = snap[h].topk(k_snap).indices
            rest = low_norm[h].clone()
            rest[first] = float("-inf")
            second = rest.topk(k - k_snap).indices
            kept.append(torch.cat([first, second]).sort().values)
        return Keep(tuple(kept))
