"""Tailored Rules: every head gets the cheapest keep-rule that still serves its newest readers.

Heads differ in what they read: some only ever read the opening entries, some read those plus a handful of entries
they return to, some need the recent stretch as well. At each eviction every KV head tries a ladder of rules, from
cheapest to dearest, and takes the first whose kept set would still carry ``recovery`` of the attention its newest
``probe`` readers paid (averaged over the readers and the query heads of the KV head):
    1. the opening entries;
    2. the opening entries + the entries with the largest running totals (``frequent_part`` of the budget);
    3. rule 2 + the newest entries (``recent_part`` of the budget);
    4. the whole budget: opening entries, the newest half, the rest by running total.
A head that is well served by a cheap rule keeps fewer entries than the cap allows. Running totals of attention are
carried across evictions by position.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class TailoredRules(EvictionMethod):
    name = "tailored_rules"
    query_window = 64
    probe = 32
    recovery = 0.95
    n_open = 4
    frequent_part = 0.3
    recent_part = 0.3

    def _totals(self, view: LayerView, rows: torch.Tensor | None) -> torch.Tensor:
        totals = view.recall("tr_totals")
        if rows is not None:
            fresh = view.query_positions > view.state.get("tr_seen", -1)
            if bool(fresh.any()):
                totals = totals + view.group(rows[:, fresh].sum(dim=1), "sum")
                view.state["tr_seen"] = int(view.query_positions.max())
        view.remember("tr_totals", totals)
        return totals

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        rows = None
        if view.queries is not None and view.query_positions is not None:
            window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
            rows = reference_attention(view.queries, view.keys, view.positions, view.query_positions,
                                       view.model.group_size, view.valid, scale=view.model.scale, window=window)
        totals = self._totals(view, rows)
        if rows is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        newest_rows = view.group(rows[:, -self.probe:], "mean")              # (H_kv, n, T)
        paid = newest_rows.mean(dim=1)                                        # (H_kv, T)
        counts = valid.sum(dim=1)
        out = []
        for h in range(view.n_kv_heads):
            c, b = int(counts[h]), view.budget
            live = valid[h]
            opening = live & (view.positions[h] < self.n_open)
            by_total = totals[h].masked_fill(~live | opening, float("-inf"))
            frequent = torch.zeros_like(live)
            n_freq = min(int(b * self.frequent_part), int((by_total > float("-inf")).sum()))
            frequent[by_total.topk(n_freq).indices] = True
            recent = torch.zeros_like(live)
            recent[max(0, c - int(b * self.recent_part)): c] = True
            ladder = [opening, opening | frequent, opening | frequent | recent]
            whole = paid[h].sum().clamp_min(1e-9)
            chosen = None
            for rule in ladder:
                if int(rule.sum()) <= b and float(paid[h][rule].sum() / whole) >= self.recovery:
                    chosen = rule
                    break
            if chosen is None:
                chosen = opening.clone()
                chosen[max(0, c - b // 2): c] = True
                fill = totals[h].masked_fill(chosen | ~live, float("-inf"))
                room = min(b - int(chosen.sum()), int((fill > float("-inf")).sum()))
                if room > 0:
                    chosen[fill.topk(room).indices] = True
                if int(chosen.sum()) > b:                                      # tiny budgets: newest first
                    idx = torch.nonzero(chosen).flatten()[-b:]
                    chosen = torch.zeros_like(live)
                    chosen[idx] = True
            out.append(torch.nonzero(chosen & live).flatten())
        return Keep(tuple(out))
