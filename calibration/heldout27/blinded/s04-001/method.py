"""Fading ledger (board C): a per-token ledger of attention received in which every entry fades step by step,
beside a protected recent stretch.

A plain running total of attention favours old tokens simply because more queries have looked at them. Here
each query's attention enters the ledger weighted by ``fade`` ** (its age in steps, counted back from the newest
query), and the whole ledger fades by the same factor for every step that passes between two calls, so a token
must keep being read to keep its place. The ledger is summed over the query heads of a KV head and carried
between calls by position. The newest ``recent_share`` of the budget is always kept; the rest goes to the largest
ledger entries.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class FadingLedger(EvictionMethod):
    name = "fading_ledger"
    query_window = 64
    fade = 0.96
    recent_share = 0.25

    def select(self, view: LayerView) -> Keep:
        ledger = view.recall("ledger")
        last = view.state.get("last_row")
        if view.queries is not None and view.query_positions is not None:
            qpos = view.query_positions.to(view.keys.device)
            fresh = qpos > (last if last is not None else -1)
            if bool(fresh.any()):
                newest = int(qpos.max())
                if last is not None:
                    ledger = ledger * self.fade ** (newest - last)
                attn = view.attention()[:, fresh]  # causal over the rows handed over; the new ones only
                age = (newest - qpos[fresh]).float()
                weight = torch.pow(torch.full_like(age, self.fade), age)
                ledger = ledger + view.group(torch.einsum("hnt,n->ht", attn, weight), "sum")
                view.state["last_row"] = newest
        view.remember("ledger", ledger)
        valid = view.valid_mask()
        score = ledger.masked_fill(~valid, float("-inf"))
        recent = int(view.budget * self.recent_share)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
