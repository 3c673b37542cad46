"""Staircase thinning for decode-time caps (board C).

A capped cache should be dense near the present and progressively sparser into the past, without the gaps that
global top-k leaves. When a layer must give tokens back, we walk the history from its oldest end in adjacent
pairs and drop the weaker token of each pair (by attention averaged across calls), moving towards the present
until enough tokens are gone; when a walk reaches the protected recent window, a new walk starts from the oldest
end again, so older regions are halved again and again. The first 4 tokens and the newest eighth of the cap are
never dropped.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

SINKS = 4


def _thin(order: list[int], weight: torch.Tensor, drop: int) -> set[int]:
    gone: set[int] = set()
    alive = list(order)
    while drop > 0 and len(alive) >= 2:
        survivors, i, removed = [], 0, 0
        while i < len(alive):
            if i + 1 < len(alive) and drop - removed > 0:
                a, b = alive[i], alive[i + 1]
                loser, winner = (a, b) if float(weight[a]) <= float(weight[b]) else (b, a)
                gone.add(loser)
                survivors.append(winner)
                removed += 1
                i += 2
            else:
                survivors.append(alive[i])
                i += 1
        drop -= removed
        alive = survivors
        if removed == 0:
            break
    return gone


class StaircaseThinning(EvictionMethod):
    name = "staircase_thinning"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        now = view.group(view.attention(reduce="mean"), "mean")            # (H_kv, T)
        before = view.recall("avg", fill=-1.0)
        weight = torch.where(before < 0, now, 0.5 * before + 0.5 * now)
        view.remember("avg", weight)
        protect = max(1, view.budget // 8)
        out = []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten().tolist()
            if len(live) <= view.budget:
                out.append(torch.tensor(live, dtype=torch.long, device=now.device))
                continue
            fixed = set(live[:SINKS]) | set(live[-protect:])
            walk = [i for i in live if i not in fixed]
            gone = _thin(walk, weight[h], len(live) - view.budget)
            kept = [i for i in live if i not in gone][-view.budget:] if len(live) - len(gone) > view.budget else \
                [i for i in live if i not in gone]
            out.append(torch.tensor(kept, dtype=torch.long, device=now.device))
        return Keep(tuple(out))
