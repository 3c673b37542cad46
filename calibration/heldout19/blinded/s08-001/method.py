"""Fading-ledger retention (board C, decode-time eviction).

Every token keeps a ledger of the attention it has received; older entries fade so that what mattered long ago
does not crowd out what matters now. The ledger is updated with every query since the previous eviction, each
weighted by how many steps ago it was issued. Opening tokens and the newest stretch are held.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class FadingLedger(EvictionMethod):
    name = "fading_ledger"
    query_window = 512
    fade = 0.98
    openers = 4
    tail = 32

    def select(self, view: LayerView) -> Keep:
        ledger = view.recall("ledger")
        if view.queries is not None:
            qpos = view.query_positions
            last_seen = view.state.get("ledger_q", -1)
            fresh = qpos > last_seen
            if bool(fresh.any()):
                rows = view.attention()[:, fresh]  # (H_q, n, T), causal
                now = int(qpos[fresh].max())
                age = (now - qpos[fresh]).float().to(rows.device)
                weight = self.fade ** age
                entry = view.group(torch.einsum("hnt,n->ht", rows, weight), "sum")
                if last_seen >= 0:
                    ledger = ledger * self.fade ** (now - last_seen)
                ledger = ledger + entry
                view.state["ledger_q"] = now
        view.remember("ledger", ledger)
        newest = view.positions.amax(dim=-1, keepdim=True)
        held = (view.positions < self.openers) | (view.positions > newest - self.tail)
        return Keep.from_topk(ledger.masked_fill(held, float("inf")), view.budget, view.valid)
