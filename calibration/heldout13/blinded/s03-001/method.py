"""Depth-relayed retention (board C).

Decode-time eviction in which the layers of the model share one importance ledger instead of each layer
ranking its own cache in isolation. Each time a layer is asked to give back a block, the attention its newest
queries paid to every cached token (all query heads, every query since that layer's previous call) is credited
to the token's ledger entry, which therefore integrates evidence over depth and over decoding time. The layer
then keeps the tokens with the largest ledger balance.

Relay: once a layer has released a token, every layer asked after it (the deeper layers of the same round and
all layers in later rounds) releases it first, so the layers agree on what the sequence has forgotten and no layer keeps a token the layers below it have
stopped serving. The newest eight tokens are never released (they have not been read yet).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DepthRelay(EvictionMethod):
    name = "depth_relay"
    query_window = 64
    fresh_guard = 8

    def setup(self, model) -> None:
        self._first = min(model.attention_layers) if model.attention_layers else 0
        self._ledger = torch.zeros(0)
        self._dropped = torch.zeros(0, dtype=torch.bool)
        self._epoch = 0

    def _grow(self, upto: int, device) -> None:
        if self._ledger.numel() <= upto:
            extra = upto + 1024 - self._ledger.numel()
            self._ledger = torch.cat([self._ledger.to(device), torch.zeros(extra, device=device)])
            self._dropped = torch.cat([self._dropped.to(device), torch.zeros(extra, dtype=torch.bool, device=device)])

    def _enter(self, view: LayerView) -> None:
        if not hasattr(self, "_ledger"):
            self.setup(view.model)
        if "epoch" not in view.state:
            if view.layer == self._first or self._epoch == 0:
                self._epoch += 1
                self._ledger = torch.zeros(0)
                self._dropped = torch.zeros(0, dtype=torch.bool)
            view.state["epoch"] = self._epoch

    def select(self, view: LayerView) -> Keep:
        self._enter(view)
        valid = view.valid_mask()
        pos = view.positions.long()
        self._grow(int(pos.max()), view.keys.device)
        if view.queries is not None and view.query_positions is not None:
            last = view.state.get("read_upto", -1)
            new_rows = view.query_positions > last
            if bool(new_rows.any()):
                probs = view.attention()[:, new_rows]  # (H_q, n_new, T), causal
                credit = view.group(probs.sum(dim=1), "sum")  # (H_kv, T)
                for h in range(view.n_kv_heads):
                    self._ledger.index_add_(0, pos[h][valid[h]], credit[h][valid[h]].float())
                view.state["read_upto"] = int(view.query_positions.max())
        balance = self._ledger[pos].clone()
        balance = balance.masked_fill(self._dropped[pos], -1e30)
        newest = pos.max(dim=1, keepdim=True).values
        balance = balance.masked_fill(pos > newest - self.fresh_guard, float("inf"))
        keep = Keep.from_topk(balance, view.budget, view.valid)
        for h in range(view.n_kv_heads):
            gone = torch.ones(pos.shape[1], dtype=torch.bool, device=pos.device)
            gone[keep.indices[h]] = False
            gone &= valid[h]
            self._dropped[pos[h][gone]] = True
        return keep
