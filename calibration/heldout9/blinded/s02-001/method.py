"""Consensus question attention (board A).

SnapKV-style question attention (Li et al., 2024, arXiv 2404.14469) averages the attention of a KV head's query heads
arithmetically, so one query head that fixes on a token can carry it into the cache on its own. Here the query heads
of a group vote by a geometric mean: a token is kept when every head of the group finds it at least somewhat useful.
Each query head's attention is summed over the question span and the last 8 prompt positions, floored at 1/T (a
token no head sees scores the floor, not zero), the log is averaged over the group and exponentiated, then
max-pooled over 5 tokens. The question span and the first 4 tokens (attention sinks, StreamingLLM, Xiao et al., 2023,
arXiv 2309.17453) are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ConsensusQuestionAttention(EvictionMethod):
    name = "consensus_question_attention"
    query_window = 8
    question_queries = True
    kernel = 5
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        per_head = view.attention(reduce="sum")                       # (H_q, T)
        floor = 1.0 / max(1, view.n_tokens)
        log_votes = per_head.clamp_min(floor).log()
        score = view.group(log_votes, "mean").exp()                     # geometric mean over the group
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        first_q = int(view.query_positions.min())
        pinned = (view.positions < self.n_sink) | (view.positions >= first_q)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
