"""Sharpness-weighted group vote (board A, question-aware prefill).

Under GQA several query heads share one KV head and SnapKV averages their attention. Not every query head is equally
informative about the question: some spread their attention almost uniformly (they contribute noise to the average),
others focus. Here each query head's vote is weighted by its sharpness, 1 - (entropy of its question attention) /
log(T), before the group's votes are combined. Then SnapKV's max-pool (kernel 5), with the prompt's last 16 tokens
and the first 4 tokens kept.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SharpnessWeightedVote(EvictionMethod):
    name = "sharpness_vote"
    query_window = 16
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        per_q = view.attention(reduce="mean")                              # (H_q, T)
        T = per_q.shape[1]
        p = per_q / per_q.sum(dim=1, keepdim=True).clamp_min(1e-9)
        ent = -(p * p.clamp_min(1e-12).log()).sum(dim=1)
        sharp = (1.0 - ent / math.log(max(T, 2))).clamp_min(1e-3)          # (H_q,)
        g = view.model.group_size
        w = sharp.view(-1, g)
        w = w / w.sum(dim=1, keepdim=True)
        vote = (per_q.view(-1, g, T) * w[..., None]).sum(dim=1)             # (H_kv, T)
        vote = F.max_pool1d(vote[:, None], 5, stride=1, padding=2)[:, 0]
        closing = int(view.query_positions[-self.query_window:].min())             # the prompt's last 16 rows
        vote = vote.masked_fill(view.positions >= closing, float("inf"))
        vote[:, :4] = float("inf")
        return Keep.from_topk(vote, view.budget, view.valid)
