"""RocketKV, stage one (SnapKV++), ported as one-shot prefill eviction.

Credit: Behnam et al., "RocketKV: Accelerating Long-Context LLM Inference via Two-Stage KV Cache Compression",
arXiv 2502.14051. This is a port of its first stage only: SnapKV++ (observation-window attention, aggregated
GQA-aware over all query heads of a KV head before pooling, with a pooling kernel that grows with the context).
Stage two (hybrid top-k sparse attention during decoding) is not ported: the harness evicts once at prefill.
On board A the observation window is the question span. Kernel sizes per context length are my choice.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RocketStageOne(EvictionMethod):
    name = "rocketkv_stage1_port"
    question_queries = True
    kernels = ((1024, 7), (8192, 15), (1 << 62, 31))  # (context up to, pooling kernel)

    def kernel_for(self, n: int) -> int:
        return next(k for limit, k in self.kernels if n <= limit)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="sum")            # (H_q, T): summed over the window queries
        scores = view.group(attn, "sum")               # GQA-aware: all query heads of the KV head together
        k = self.kernel_for(view.n_tokens)
        scores = F.max_pool1d(scores[:, None], k, stride=1, padding=k // 2)[:, 0]
        if view.query_positions is not None:
            scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
