"""Stratified coverage floor (board C, decode-time).

Accumulated attention (H2O) concentrates what a long trace keeps: once a stretch of the prompt or of the early
reasoning has lost the race, it loses it for good, and the cache ends up holding the opening, the newest
steps and a few hot spots. A reasoning trace often comes back to an intermediate result in the middle, though.
The coverage floor leaves H2O's ranking alone but guarantees every stretch of the held history a small
quota: the held tokens outside the recent tail are cut into 4 equal position strata, and each stratum keeps
its own best tokens (by accumulated attention) up to a floor of a sixteenth of the budget; the remaining
budget goes, as in H2O, to the best accumulated attention overall and to a recent tail of an eighth.
Accumulated attention is summed over every query since the previous eviction and carried across evictions by
position (StreamingLLM-style recency and H2O-style sums are the building blocks; the floor is the addition).
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class StratifiedCoverageFloor(EvictionMethod):
    name = "stratified_coverage_floor"
    query_window = 64
    strata = 4
    floor_share = 1 / 16
    tail_share = 1 / 8

    def _accumulate(self, view: LayerView) -> torch.Tensor:
        acc = view.recall("acc")
        if view.queries is not None:
            last = view.state.get("last_q", -1)
            new = view.query_positions > last
            if bool(new.any()):
                part = view.attention(reduce="sum") if bool(new.all()) else \
                    view.attention(view.queries[:, new], reduce="sum")
                acc = acc + view.group(part, "sum")
                view.state["last_q"] = int(view.query_positions.max())
        view.remember("acc", acc)
        return acc

    def select(self, view: LayerView) -> Keep:
        acc = self._accumulate(view)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            n = live.numel()
            want = min(view.budget, n)
            a = acc[h, live]
            chosen = torch.zeros(n, dtype=torch.bool, device=a.device)
            tail = int(want * self.tail_share)
            if tail:
                chosen[n - tail:] = True
            body = n - tail
            floor = int(want * self.floor_share)
            if floor and body > 0:
                edges = torch.linspace(0, body, self.strata + 1).round().long().tolist()
                for lo, hi in zip(edges[:-1], edges[1:]):
                    if hi > lo:
                        top = a[lo:hi].topk(min(floor, hi - lo)).indices + lo
                        chosen[top] = True
            rest = want - int(chosen.sum())
            if rest > 0:
                rank = a.masked_fill(chosen, float("-inf"))
                chosen[rank.topk(rest).indices] = True
            out.append(live[chosen])
        return Keep(tuple(out))
