"""Rising-interest memory (board C, decode-time).

H2O (Zhang et al., 2023, arXiv:2306.14048) keeps the tokens with the most accumulated attention; A2SF (Jo et al.,
2024, arXiv:2407.20485) lets that total forget; TOVA (Oren et al., 2024, arXiv:2401.06104) looks only at the
newest query. All three rank by a level. While reasoning, what matters next is often what the trace has just
started to look at again: a quantity from the problem statement, an intermediate result. Rising-interest memory
ranks by level *plus trend*: a slow and a fast average of each token's attention are carried across evictions,
and a token whose fast average is above its slow one gets the difference as a bonus. Our idea; credits above.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class RisingInterest(EvictionMethod):
    name = "rising_interest"
    query_window = 32
    fast = 0.6              # weight of the newest round in the fast average
    slow = 0.1              # ... in the slow average
    bonus = 2.0             # how much a rising trend is worth relative to the level
    newest = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        now = view.group(view.attention(reduce="mean"), "mean")          # this round's attention
        seen = view.state.get("rounds", 0) > 0
        f_old = view.recall("fast", fill=-1.0)
        s_old = view.recall("slow", fill=-1.0)
        # a token with no history starts at its current level: no trend either way
        f_old = torch.where(f_old < 0, now, f_old)
        s_old = torch.where(s_old < 0, now, s_old)
        f_new = (1 - self.fast) * f_old + self.fast * now if seen else now
        s_new = (1 - self.slow) * s_old + self.slow * now if seen else now
        view.remember("fast", f_new)
        view.remember("slow", s_new)
        view.state["rounds"] = view.state.get("rounds", 0) + 1
        score = s_new + self.bonus * (f_new - s_new).clamp(min=0)
        newest = view.positions.max(dim=-1, keepdim=True).values - self.newest
        score = score.masked_fill(view.positions > newest, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
