"""Fade Ledger: a running ledger of the attention each token receives, where old entries fade.

Every decoding step writes the attention its query pays each cached token into a per-token ledger (summed over
the KV head's query heads); before a step is written, the whole ledger fades by a constant factor, so a token's
entry is the sum of what it received, each step discounted by how long ago it happened. When a layer reaches its
cap, the tokens with the smallest entries leave, except the newest 16, which have not had time to earn any.
Every query since the previous eviction is written in order (the newest 64 queries are handed over, more than a
block), and the ledger is carried to the next call by position.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class FadeLedger(EvictionMethod):
    name = "fade_ledger"
    query_window = 64
    fade = 0.96
    newest = 16

    def _write(self, view: LayerView, ledger: torch.Tensor) -> torch.Tensor:
        if view.queries is None or view.query_positions is None:
            return ledger
        new = view.query_positions > view.state.get("written_upto", -1)
        steps = int(new.sum())
        if steps == 0:
            return ledger
        paid = view.group(view.attention()[:, new], "sum")                     # (H_kv, steps, T)
        ago = torch.arange(steps - 1, -1, -1, device=paid.device, dtype=torch.float32)
        discount = torch.exp(ago * torch.log(torch.tensor(self.fade, device=paid.device)))
        ledger = ledger * self.fade**steps + torch.einsum("hst,s->ht", paid, discount)
        view.state["written_upto"] = int(view.query_positions.max())
        return ledger

    def select(self, view: LayerView) -> Keep:
        ledger = self._write(view, view.recall("ledger"))
        view.remember("ledger", ledger)
        score = ledger.clone()
        lengths = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            score[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
