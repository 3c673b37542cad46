"""Steady Gaze (board A): the question's attention rows are summed with a weight per row, one minus the row's
normalised entropy, so a question token that looks at one place counts more than one that looks everywhere."""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SteadyGaze(EvictionMethod):
    name = "steady_gaze"
    query_window = 8
    question_queries = True
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()                                    # (H_q, N, T)
        t = att.shape[-1]
        ent = -(att * att.clamp_min(1e-12).log()).sum(-1) / math.log(max(2, t))
        weight = (1.0 - ent).clamp_min(0.0)                       # (H_q, N)
        score = (att * weight[..., None]).sum(dim=1) + 1e-6 * att.sum(dim=1)
        score = view.group(score, "mean")
        score = F.avg_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
