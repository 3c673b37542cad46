"""Nearest-Key Ballot: every question token nominates the keys nearest to it, and the context keeps the most-nominated."""

import torch

from harness import EvictionMethod, Keep, LayerView


class NearestKeyBallot(EvictionMethod):
    name = "nearest_key_ballot"
    question_queries = True
    nominees = 48

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        keys = view.keys.float().repeat_interleave(view.model.group_size, dim=0)     # (Hq, T, D)
        inner = view.queries.float() @ keys.transpose(1, 2)                          # (Hq, N, T)
        if view.valid is not None:
            inner = inner.masked_fill(~view.valid.repeat_interleave(view.model.group_size, 0)[:, None], float("-inf"))
        r = min(self.nominees, inner.shape[-1])
        top = inner.topk(r, dim=-1)
        ballots = torch.zeros_like(inner).scatter_(-1, top.indices, 1.0).sum(1)     # (Hq, T)
        peak = inner.amax(1)
        peak = (peak - peak.amin(-1, keepdim=True)) / (peak.amax(-1, keepdim=True) - peak.amin(-1, keepdim=True) + 1e-6)
        score = view.group(ballots + 0.5 * peak, "sum")
        return Keep.from_topk(score, view.budget, view.valid)
