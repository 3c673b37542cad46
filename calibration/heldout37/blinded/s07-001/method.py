"""Fading Ledger: decode-time eviction by a ledger of attention in which older evidence fades."""

import torch

from harness import EvictionMethod, Keep, LayerView


class FadingLedger(EvictionMethod):
    name = "fading_ledger"
    query_window = 48
    fade = 0.93            # each step older, an entry's weight is multiplied by this
    tail = 8               # the newest tokens stay

    def _ledger(self, view: LayerView) -> torch.Tensor:
        probs = view.attention()                                  # (H_q, N, T)
        n = probs.shape[1]
        age = torch.arange(n - 1, -1, -1, dtype=torch.float32, device=probs.device)
        weight = self.fade ** age                                 # newest query weight 1
        entries = torch.einsum("hnt,n->ht", probs, weight)
        return view.group(entries, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ledger = self._ledger(view)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            ledger[h, max(0, c - self.tail): c] = float("inf")
        return Keep.from_topk(ledger, view.budget, view.valid)
