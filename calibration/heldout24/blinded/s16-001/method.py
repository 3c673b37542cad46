"""Tile relay (board B_offline, reconstruction pass).

The reconstruction pass shows which parts of the context the model needs to rebuild it. Reading it token by
token is noisy; reading it in tiles is steadier. The pass's rows are cut into row tiles and the context into
key tiles; a key tile's need is the strongest logit any row of a tile gives any key in it, turned into a
share per row tile, and its worth is its best share over row tiles. Worth is relayed down the stack: a layer's
tile worth is blended with the previous layer's, so neighbouring layers agree on which tiles matter. Whole
tiles are kept in order of worth; the last tile that does not fit is cut by its tokens' own peak attention.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class TileRelay(EvictionMethod):
    name = "tile_relay"
    reconstruction_queries = True
    row_tile = 32
    key_tile = 16
    carry = 0.35              # share of the previous layer's tile worth blended in

    def _tile_worth(self, view: LayerView) -> torch.Tensor:
        """(H_kv, n_tiles)."""
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        n_tiles = -(-t // self.key_tile)
        pad_t = n_tiles * self.key_tile
        k = torch.zeros(h_kv, pad_t, d, device=view.keys.device)
        k[:, :t] = view.keys.float()
        mask = torch.zeros(h_kv, pad_t, dtype=torch.bool, device=k.device)
        mask[:, :t] = view.valid_mask()
        q = view.queries.float()
        worth = torch.full((h_kv, n_tiles), float("-inf"), device=k.device)
        for s in range(0, q.shape[1], self.row_tile):
            rows = q[:, s:s + self.row_tile]                                   # (H_q, r, D)
            r = rows.shape[1]
            logit = torch.bmm(rows.reshape(h_kv, g * r, d), k.transpose(1, 2)) * view.model.scale
            logit = logit.masked_fill(~mask[:, None, :], float("-inf"))
            tile_max = logit.view(h_kv, g * r, n_tiles, self.key_tile).amax(-1).amax(1)   # (H_kv, n_tiles)
            share = tile_max.softmax(-1)
            worth = torch.maximum(worth, share)
        return worth

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        worth = self._tile_worth(view)
        prev = getattr(self, "_relay", None)
        if prev is not None and prev[0] == (view.n_tokens, view.layer - 1) and prev[1].shape == worth.shape:
            worth = (1 - self.carry) * worth + self.carry * prev[1]
        self._relay = ((view.n_tokens, view.layer), worth)
        peak = view.group(view.attention(reduce="max"), "max")
        ok = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            order = worth[h].argsort(descending=True)
            token_tile = torch.arange(view.n_tokens, device=order.device) // self.key_tile
            rank_of_tile = torch.empty_like(order)
            rank_of_tile[order] = torch.arange(order.numel(), device=order.device)
            # whole tiles first, by worth; inside a tile, by the token's own peak
            score = -rank_of_tile[token_tile].float() * 10.0 + peak[h].clamp(0, 1)
            score = score.masked_fill(~ok[h], float("-inf"))
            b = min(view.budget, int(ok[h].sum()))
            out.append(score.topk(b).indices.sort().values)
        return Keep(tuple(out))
