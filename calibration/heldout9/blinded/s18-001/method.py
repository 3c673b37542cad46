"""Diverse passage selection (board A).

The cache is kept in blocks of 16 tokens, and the blocks are chosen to be both relevant to the question and
different from each other, so that a small budget is not spent on near-copies of the same passage. Relevance is read
from the question (its span plus the last 16 prompt queries); the selection then favours a spread of blocks.
The question span and the first 4 tokens are always kept; a block that does not fit whole is cut to its best tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _blockify(x: torch.Tensor, size: int, dim: int) -> torch.Tensor:
    n = x.shape[dim]
    pad = (-n) % size
    if pad:
        shape = list(x.shape)
        shape[dim] = pad
        x = torch.cat([x, x.new_zeros(shape)], dim=dim)
    shape = list(x.shape)
    shape[dim:dim + 1] = [x.shape[dim] // size, size]
    return x.reshape(shape)


class DiversePassageSelection(EvictionMethod):
    name = "diverse_passage_selection"
    query_window = 16
    question_queries = True
    block = 16
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()                                              # (H_q, N, T)
        t = att.shape[-1]
        cells = _blockify(_blockify(att, self.block, 2).amax(dim=-1), self.block, 1).amax(dim=2)  # (H_q, nq, nb)
        cells = cells / cells.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        relevance = view.group(cells.mean(dim=1), "mean")                   # (H_kv, nb)
        per_token = relevance.repeat_interleave(self.block, dim=1)[:, :t]
        fine = view.group(att.sum(dim=1), "mean")
        score = per_token + 1e-3 * fine / fine.amax(dim=1, keepdim=True).clamp_min(1e-12)
        first_q = int(view.query_positions.min())
        pinned = (view.positions < self.n_sink) | (view.positions >= first_q)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
