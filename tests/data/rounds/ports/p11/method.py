"""Fading ledger (board C, decode-time): a running ledger of the attention each entry receives, where every new
row first shrinks the old entries' balances by a constant factor, so that old entries are not favoured merely for
having been around for more rows."""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class FadingLedger(EvictionMethod):
    name = "fading_ledger"
    query_window = 64
    fade = 0.95
    guard = 0.1          # share of the budget for the newest entries

    def select(self, view: LayerView) -> Keep:
        ledger = view.recall("ledger")
        if view.queries is not None:
            qpos = view.query_positions
            new = qpos > view.state.get("last_row", -1)
            n_new = int(new.sum())
            if n_new:
                rows = reference_attention(view.queries[:, new], view.keys, view.positions, qpos[new],
                                           view.model.group_size, view.valid, scale=view.model.scale)
                rows = view.group(rows, "sum")                       # (H_kv, n, T)
                decay = self.fade ** torch.arange(n_new - 1, -1, -1, dtype=torch.float32, device=rows.device)
                ledger = ledger * (self.fade ** n_new) + torch.einsum("hnt,n->ht", rows, decay)
                view.state["last_row"] = int(qpos.max())
        view.remember("ledger", ledger)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = ledger.clone()
        g = int(view.budget * self.guard)
        live = view.valid_mask()
        for h in range(view.n_kv_heads):
            n = int(live[h].sum())
            if g:
                score[h, n - g: n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
