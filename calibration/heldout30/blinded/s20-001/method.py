"""Downstream: question attention whose smoothing only looks forward, where answers sit.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): the question and closing rows score the context by the
attention they pay it, and pooling keeps the neighbourhood of each hit. SnapKV pools symmetrically. But what the
question attends to is usually the key it names ("the number for X is"), and the answer is written after that
key, not before it: the tokens just downstream of a hit matter, the ones upstream rarely do. Here a token's score
is the larger of its own summed attention and 0.8 times the largest score among the 12 tokens just before it, so
each hit lends its weight to the span that follows it and nothing to the span before. Scores are summed over the
rows and averaged over each KV head's query heads. The first 4 tokens (StreamingLLM, arXiv 2309.17453) and the
rows themselves are kept. ChunkKV (arXiv 2502.00299) keeps whole chunks for a similar reason; this keeps an
asymmetric neighbourhood instead of a fixed grid.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Downstream(EvictionMethod):
    name = "downstream"
    question_queries = True
    query_window = 16
    reach = 12
    carry = 0.8
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")                  # (H_kv, T)
        t = s.shape[-1]
        before = F.max_pool1d(F.pad(s[:, None], (self.reach, 0)), self.reach, stride=1)[:, 0, :t]
        score = torch.maximum(s, self.carry * before)
        pinned = (view.positions < self.n_sink) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
