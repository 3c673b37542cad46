"""Ballot-box retention (board A).

Each query row of the question (plus a short closing window) holds an election among the context tokens: every query
head normalises its own logits into a ballot, ballots are counted across all heads of the layer, and a row's tally is
added to the running count. The count decides for the whole layer; the newest rows are always kept.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class BallotBox(EvictionMethod):
    name = "ballot_box"
    query_window = 16
    question_queries = True
    tail = 16

    def _logits(self, view: LayerView) -> torch.Tensor:
        q = view.queries.float()  # (H_q, N, D)
        k = view.keys.float().repeat_interleave(view.model.group_size, dim=0)  # (H_q, T, D)
        raw = torch.einsum("hnd,htd->hnt", q, k) * view.model.scale
        qpos = view.query_positions.view(1, -1, 1)
        kpos = view.positions.repeat_interleave(view.model.group_size, dim=0).unsqueeze(1)
        raw = raw.masked_fill(kpos > qpos, -math.inf)
        if view.valid is not None:
            pad = ~view.valid.repeat_interleave(view.model.group_size, dim=0).unsqueeze(1)
            raw = raw.masked_fill(pad, -math.inf)
        return raw

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ballots = torch.softmax(self._logits(view), dim=-1).nan_to_num(0.0)  # per head, per row
        tally = ballots.sum(dim=0).sum(dim=0)  # heads vote together, rows add up: (T,)
        votes = tally.expand(view.n_kv_heads, -1).clone()
        newest = view.positions.amax(dim=-1, keepdim=True)
        votes[view.positions > newest - self.tail] = math.inf
        return Keep.from_topk(votes, view.budget, view.valid)
