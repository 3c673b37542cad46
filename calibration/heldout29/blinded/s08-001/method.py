"""Port of the first stage of RocketKV (Behnam et al., 2025, arXiv 2502.14051): "SnapKV++".

RocketKV compresses in two stages: a permanent, coarse eviction of the prompt's KV cache by SnapKV++ and then a
hybrid sparse attention while decoding. Only the first stage is ported here, as a one-shot eviction on board A.
SnapKV++ changes two things in SnapKV: it is GQA-aware (the observation window's attention is summed over all query
heads that share a KV head, so each KV head ranks its own tokens once instead of per query head), and its pooling
kernel grows with the prompt length rather than being fixed.

Deviations (mine): the second stage (sparse decode attention) is not ported, the harness has nothing like it; the
kernel schedule below (odd, 2 * floor(log2(T / 256)) + 7, clamped to [7, 19]) is my reading of "adaptive pooling"
and not the paper's exact table, and the pooling is an average (my choice); the observation window is the question span plus the last 16 prompt rows; the
window is always kept, as in SnapKV.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SnapKVPlusPlusPort(EvictionMethod):
    name = "snapkv_pp_port"
    query_window = 16
    question_queries = True

    @staticmethod
    def kernel_for(n_tokens: int) -> int:
        k = 2 * int(math.floor(math.log2(max(n_tokens, 256) / 256))) + 7
        return max(7, min(19, k))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="sum")                    # (H_q, T): summed over the window rows
        scores = view.group(attn, "sum")                       # GQA-aware: summed over the KV head's query heads
        k = self.kernel_for(view.n_tokens)
        scores = F.avg_pool1d(scores[:, None], k, stride=1, padding=k // 2, count_include_pad=False)[:, 0]
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
