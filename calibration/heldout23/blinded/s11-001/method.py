"""Rank-fused heads (board A, question-aware prefill).

SnapKV (Li et al., 2024, arXiv 2404.14469) averages attention probabilities over the query heads that share a KV
head. Probabilities from different heads are on different scales: one sharp head can drown the others, and a
head that finds the needle at probability 0.02 counts for little next to a head that parks 0.5 on a sink. This
method instead fuses the heads' rankings with reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009,
an information-retrieval technique): each query head ranks the tokens by the summed attention of the question
rows, and a token scores sum over heads of 1 / (60 + rank). Neighbours of well-ranked tokens get an echo (0.9 of
the neighbour's fused score, one token each side) so a kept fact keeps its immediate context. Question rows and
the first 4 tokens are kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class RankFusedHeads(EvictionMethod):
    name = "rank_fused_heads"
    query_window = 8
    question_queries = True
    rrf_k = 60.0
    echo = 0.9
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention(reduce="sum")                                  # (H_q, T)
        ok_q = view.valid_mask().repeat_interleave(view.model.group_size, 0)
        att = att.masked_fill(~ok_q, float("-inf"))
        order = att.argsort(-1, descending=True)
        rank = torch.empty_like(order)
        rank.scatter_(-1, order, torch.arange(att.shape[-1], device=att.device).expand_as(order))
        fused = (1.0 / (self.rrf_k + rank.float() + 1.0)).masked_fill(~ok_q, 0.0)
        fused = view.group(fused, "sum")                                    # (H_kv, T)
        left = torch.nn.functional.pad(fused[:, :-1], (1, 0))
        right = torch.nn.functional.pad(fused[:, 1:], (0, 1))
        fused = torch.maximum(fused, self.echo * torch.maximum(left, right))
        keep = (view.positions >= int(view.query_positions.min())) | (view.positions < self.n_sink)
        return Keep.from_topk(fused.masked_fill(keep, float("inf")), view.budget, view.valid)
