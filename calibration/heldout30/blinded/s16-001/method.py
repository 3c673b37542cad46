"""Crosshatch: tiles of the question's attention map, rated by a sparse diagonal hatch.

The attention of the question and the closing 32 rows over the context is laid out as a map and cut into 16 x 16
tiles. Rather than summing a whole tile, each tile is read along a hatch of parallel lines running from its
lower-left to its upper-right corner, one line in every 8 (cells whose row and column indices add up to 7, 15,
23 or 31): every row and every column of the tile crosses the hatch, so a tile lit anywhere is seen, at an
eighth of the reading. A key tile's rating is its hatch total over all row tiles and over the KV head's query
heads, shared out as a fraction of the layer's total. Key tiles are taken best first until they hold 90 % of the
rating or the budget runs out; the rows themselves and the first 4 tokens are always kept, and leftover room goes
to single tokens by their attention.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class Crosshatch(EvictionMethod):
    name = "crosshatch"
    question_queries = True
    query_window = 32
    tile = 16
    every = 8
    cover = 0.9
    n_sink = 4

    def _hatch(self, device: torch.device) -> torch.Tensor:
        r = torch.arange(self.tile, device=device)
        return (((r[:, None] + r[None, :]) % self.every) == self.every - 1).float()[None, None]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                               # (H_q, N, T)
        h_q, n, t = attn.shape
        b = self.tile
        grid = F.pad(attn, (0, (-t) % b, 0, (-n) % b))[:, None]                  # (H_q, 1, N', T')
        tiles = F.conv2d(grid, self._hatch(attn.device), stride=b)[:, 0]       # (H_q, N'/b, T'/b)
        rating = view.group(tiles.sum(dim=1), "sum")                           # (H_kv, T'/b)
        token = view.group(attn.sum(dim=1), "sum")
        first_row = int(view.query_positions.min())
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            pos = view.positions[h, idx]
            size = min(view.budget, idx.numel())
            take = torch.zeros(idx.numel(), dtype=torch.bool, device=idx.device)
            fixed = torch.cat([torch.nonzero(pos >= first_row).flatten().flip(0),
                               torch.nonzero((pos < self.n_sink) & (pos < first_row)).flatten()])
            take[fixed[:size]] = True
            r = rating[h, : -(-idx.numel() // b)]
            share = r / r.sum().clamp_min(1e-12)
            got = 0.0
            for j in share.argsort(descending=True).tolist():
                if got >= self.cover:
                    break
                members = torch.arange(j * b, min((j + 1) * b, idx.numel()), device=idx.device)
                members = members[~take[members]]
                if int(take.sum()) + members.numel() > size:
                    break
                take[members] = True
                got += float(share[j])
            room = size - int(take.sum())
            if room > 0:
                rest = token[h, idx].masked_fill(take, float("-inf"))
                take[rest.topk(room).indices] = True
            out.append(idx[take])
        return Keep(tuple(out))
