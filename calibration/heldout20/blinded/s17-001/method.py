"""Phrase-tile retention with tiered reuse (board B_offline).

Facts are phrases, not tokens. The context is tiled into phrase tiles of 8 tokens; the closing rows of the context
rate each tile by the attention they pay to it in total, and whole tiles are kept in order of rating until the budget
is spent. Adjacent layers read the context much alike, so the tiling is decided once per tier of four consecutive
layers (at the tier's first layer) and reused by the rest of the tier, which also keeps a phrase intact across the
layers that read it together. The closing rows' own tokens are kept in every layer.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class PhraseTileRetention(EvictionMethod):
    name = "phrase_tiles"
    query_window = 32
    tile = 8
    tier = 4

    def setup(self, model) -> None:
        self._order = {a: i for i, a in enumerate(model.attention_layers)}
        self._plans: dict = {}

    def _plan(self, view: LayerView) -> torch.Tensor:
        T = view.n_tokens
        att = view.attention(reduce="sum").sum(dim=0)                  # (T,): all heads together
        closing = view.positions[0] >= int(view.query_positions.min())
        n_tiles = (T + self.tile - 1) // self.tile
        padded = torch.zeros(n_tiles * self.tile, device=att.device)
        padded[:T] = att
        rating = padded.view(n_tiles, self.tile).sum(dim=1)
        chosen = closing.clone()
        if int(chosen.sum()) > view.budget:
            chosen[: T - view.budget] = False
        room = view.budget - int(chosen.sum())
        for t_idx in rating.argsort(descending=True).tolist():
            if room <= 0:
                break
            lo, hi = t_idx * self.tile, min(T, (t_idx + 1) * self.tile)
            fresh = (~chosen[lo:hi]).nonzero().squeeze(1) + lo
            fresh = fresh[:room]
            chosen[fresh] = True
            room -= fresh.numel()
        return chosen.nonzero().squeeze(1)

    def select(self, view: LayerView) -> Keep:
        order = getattr(self, "_order", {}).get(view.layer, view.layer)
        key = (order // self.tier, view.n_tokens, view.budget)
        plans = getattr(self, "_plans", None)
        if plans is None:
            plans = self._plans = {}
        if order % self.tier == 0 or key not in plans:
            plans[key] = self._plan(view)
        idx = plans[key]
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
