"""Guarded Reading: the question's rows vote for context tokens; each token keeps the loudest vote it got and a
small share of the typical vote, so no token the question needs is outvoted by the average."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class GuardedReading(EvictionMethod):
    name = "guarded_reading"
    query_window = 16
    question_queries = True
    floor = 24          # below this many kept tokens the reading is too thin to trust
    prior = 0.2
    anchor = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.budget < self.floor:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = view.attention()                                  # (H_q, N, T)
        loud = rows.amax(dim=1)
        typical = rows.mean(dim=1)
        vote = loud + self.prior * typical
        vote = view.group(vote, "max")
        vote = F.max_pool1d(vote[:, None], 5, stride=1, padding=2)[:, 0]
        vote[:, : self.anchor] = float("inf")
        return Keep.from_topk(vote, view.budget, view.valid)
