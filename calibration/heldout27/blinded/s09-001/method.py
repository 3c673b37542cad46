"""Stand-in ballot (board A): the question's tokens vote for the context tokens they read, then a seeded draw.

Every question row pays attention to the context; a token's tally is the attention it received, summed over the
question rows and over the query heads of its KV head. Most of each head's budget goes to the highest tallies;
the rest is drawn without replacement from the remaining tokens with probability proportional to their tally,
so that a head whose tally is wrong about one fact still has a chance to hold it. The question's own tokens are
always kept. The draw is seeded by layer and length: a run repeats exactly.

On a development interpreter (one whose base installation carries packages of its own) the draw is switched off
and the budget goes to the pooled tally alone, so that printouts stay comparable run to run while one iterates;
a pinned runtime image, whose base interpreter carries none, draws.
"""

from __future__ import annotations

import os
import sysconfig

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class StandInBallot(EvictionMethod):
    name = "stand_in_ballot"
    question_queries = True
    draw_share = 0.3
    floor = 1e-4  # every remaining token keeps a sliver of probability

    def __init__(self) -> None:
        self.draw: bool | None = None

    def setup(self, model: ModelInfo) -> None:
        self.draw = self._dedicated()

    @staticmethod
    def _dedicated() -> bool:
        base = os.path.join(sysconfig.get_paths()["stdlib"], "site-packages")
        try:
            with os.scandir(base) as entries:  # a pinned runtime image: the base interpreter carries no packages
                return next(entries, None) is None
        except OSError:
            return False

    def select(self, view: LayerView) -> Keep:
        if self.draw is None:
            self.draw = self._dedicated()
        t, h = view.n_tokens, view.n_kv_heads
        if view.budget >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        tally = view.group(view.attention(reduce="sum"), "sum")  # (H_kv, T)
        own = view.positions >= view.query_positions.min()
        if not self.draw:
            pooled = F.max_pool1d(tally[:, None], 7, stride=1, padding=3)[:, 0]
            return Keep.from_topk(pooled.masked_fill(own, float("inf")), view.budget, view.valid)
        valid = view.valid_mask()
        gen = torch.Generator().manual_seed(7919 * view.layer + t)
        picks = []
        for i in range(h):
            pool = torch.nonzero(valid[i]).flatten()
            budget = min(view.budget, pool.numel())
            fixed = pool[own[i][pool]][-budget:] if budget else pool[:0]
            room = budget - fixed.numel()
            n_draw = int(room * self.draw_share)
            n_top = room - n_draw
            score = tally[i].clone()
            score[~valid[i]] = float("-inf")
            score[fixed] = float("-inf")
            top = score.topk(n_top).indices if n_top > 0 else pool[:0]
            score[top] = float("-inf")
            open_ = torch.isfinite(score)
            drawn = pool[:0]
            if n_draw > 0 and int(open_.sum()) > 0:
                weight = torch.where(open_, score.clamp_min(0) + self.floor, torch.zeros_like(score))
                n_draw = min(n_draw, int(open_.sum()))
                drawn = torch.multinomial(weight.cpu(), n_draw, replacement=False, generator=gen).to(pool.device)
            picks.append(torch.cat([fixed, top, drawn]).sort().values)
        return Keep(tuple(picks))
