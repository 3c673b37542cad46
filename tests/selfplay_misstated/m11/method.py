"""Topic Cover: peak question attention per token, group-max over query heads, sinks kept."""

import torch

from harness import EvictionMethod, Keep, LayerView


class TopicCover(EvictionMethod):
    name = "topic_cover"
    query_window = 4
    question_queries = True
    n_sink = 2

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(-view.keys.float().norm(dim=-1), view.budget, view.valid)
        peak = view.attention(reduce="max")                 # (H_q, T): the strongest look each token got
        peak = view.group(peak, "max")                      # (H_kv, T)
        rank = peak.argsort(dim=-1, descending=True).argsort(dim=-1).float()
        score = -rank                                       # rank-based, so heads are comparable
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
