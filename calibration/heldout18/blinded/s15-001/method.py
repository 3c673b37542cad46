"""Context-scaled smoothing (board B_offline).

A rereading of the context (the offline pass) tells which entries are used. Scores are gathered per KV head directly,
summing over all of its query heads (a grouped read rather than per-query-head picks), and smoothed along the sequence
with a window that widens with the context length, so long contexts keep longer runs of text.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _smoothing_width(n_tokens: int) -> int:
    """Odd width growing with log2 of the length: 512 -> 7, 4K -> 13, 32K -> 19."""
    w = 2 * int(round(max(0.0, math.log2(max(n_tokens, 2)) - 6))) + 1
    return max(3, w)


class ContextScaledSmoothing(EvictionMethod):
    name = "context_scaled_smoothing"
    reconstruction_queries = True
    query_window = 0
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        used = view.attention(view.queries, reduce="sum")  # (H_q, T)
        grouped = view.group(used, "sum")  # one read per KV head
        width = _smoothing_width(view.n_tokens)
        smooth = F.avg_pool1d(grouped[:, None], width, stride=1, padding=width // 2, count_include_pad=False)[:, 0]
        smooth[:, : self.sinks] = float("inf")
        return Keep.from_topk(smooth, view.budget, view.valid)
