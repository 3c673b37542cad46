"""Nucleus Ballot: each question query votes only for the tokens inside its own attention nucleus.

A question query spreads a long, thin tail of attention over the whole context; summed over many queries
that tail drowns the few tokens each query really reads. Here every query keeps only the smallest set of
tokens that carries `mass` of its attention (its nucleus), and only those tokens receive its attention.
The ballots are summed over queries and over each KV head's query heads.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class NucleusBallot(EvictionMethod):
    name = "nucleus_ballot"
    query_window = 16
    question_queries = True
    mass = 0.6
    sinks = 4
    recent = 8

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, N, T)
        srt, order = attn.sort(dim=-1, descending=True)
        before = srt.cumsum(dim=-1) - srt  # mass strictly above each entry
        inside = (before < self.mass).to(attn.dtype)
        ballots = torch.zeros_like(attn).scatter_(-1, order, srt * inside)
        score = view.group(ballots.sum(dim=1), "sum")
        valid = view.valid_mask()
        last = (view.positions.masked_fill(~valid, -1)).max(dim=1, keepdim=True).values
        protect = (view.positions < self.sinks) | (view.positions > last - self.recent)
        score = score.masked_fill(protect & valid, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
