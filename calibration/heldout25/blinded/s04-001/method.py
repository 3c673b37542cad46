"""SnapKV++ permanent-eviction stage of RocketKV, ported to the arena (board A).

Port of the first stage of RocketKV (Behnam et al., 2025, "RocketKV: Accelerating Long-Context LLM Inference via
Two-Stage KV Cache Compression", arXiv:2502.14051). The scoring idea is RocketKV's (SnapKV's observation window
with GQA-aware aggregation and a pooling size that adapts to the context), not ours.

What is the same: an observation window of the last prompt rows (here with the question span, board A), attention
summed over the window and over every query head that shares a KV head (GQA-aware), 1-D pooling of the scores,
top-k per KV head with the window itself kept.
What differs: the second stage (hybrid sparse attention during decoding) is not ported, since the arena
evicts once after prefill; the adaptive pooling size is our approximation of the paper's rule (a kernel that
widens with the compression ratio, odd, 3 to 15) because we did not have its exact schedule.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def pooling_size(n_tokens: int, budget: int) -> int:
    ratio = n_tokens / max(1, budget)
    k = int(round(ratio ** 0.5 * 2)) | 1
    return max(3, min(15, k))


class SnapKVPlusPlusPort(EvictionMethod):
    name = "snapkv_pp_port"
    query_window = 32
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        summed = view.group(view.attention(reduce="sum"), "sum")          # GQA-aware: sum over the group
        k = pooling_size(view.n_tokens, view.budget)
        pooled = F.avg_pool1d(summed[:, None], k, stride=1, padding=k // 2, count_include_pad=False)[:, 0]
        first_q = int(view.query_positions.min())
        pooled = pooled.masked_fill(view.positions >= first_q, float("inf"))   # the window stays
        return Keep.from_topk(pooled, view.budget, view.valid)
