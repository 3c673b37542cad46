"""Agreement-routed reading (board A, query-aware prefill).

Heads do not all read a context the same way. Some come back to a few coarse stretches of it; others return to
a handful of single positions and to a few fixed distances behind the reader. Agreement routing decides, per KV
head and per layer, which kind of reader it is dealing with: it compares a cheap coarse sketch (one averaged
tail query against tile-averaged keys) with the tail's real attention folded into the same tiles. When the two
agree, the head is tile-readable and keeps whole tiles in sketch order; when they disagree, the head keeps
columns (positions every tail row returns to) and diagonals (fixed distances behind the newest row), each side
getting a share of the budget proportional to how many lines it needs to cover most of the mass.
"""

from __future__ import annotations

import math

import torch

from harness import EvictionMethod, Keep, LayerView


def _js(p: torch.Tensor, q: torch.Tensor) -> float:
    m = 0.5 * (p + q)
    def kl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        keep = a > 0
        return (a[keep] * (a[keep] / b[keep].clamp_min(1e-12)).log()).sum()
    return float(0.5 * kl(p, m) + 0.5 * kl(q, m))


def _lines_needed(mass: torch.Tensor, cover: float) -> int:
    """How many of the heaviest entries of ``mass`` it takes to reach ``cover`` of its total."""
    total = float(mass.sum())
    if total <= 0:
        return 1
    run = mass.sort(descending=True).values.cumsum(0) / total
    return int((run < cover).sum()) + 1


class AgreementRoutedReading(EvictionMethod):
    name = "agreement_routed_reading"
    query_window = 64
    tile = 16
    agree_below = 0.1        # sqrt(JS) between sketch and folded attention under which a head is tile-read
    cover = 0.95             # share of the mass the columns / diagonals have to reach

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        attn = view.attention()                                   # (H_q, N, T) causal
        qpos = view.query_positions
        newest = int(qpos.max())
        picks = []
        for h in range(view.n_kv_heads):
            rows = attn[h * g:(h + 1) * g]                       # (g, N, T)
            live = valid[h]
            n_live = int(live.sum())
            want = min(view.budget, n_live)
            idx_live = torch.nonzero(live).flatten()
            col = rows.sum(dim=(0, 1))[idx_live]                 # (n_live,)
            n_tiles = math.ceil(n_live / self.tile)
            tile_of = torch.arange(n_live, device=col.device) // self.tile
            folded = torch.zeros(n_tiles, device=col.device).index_add_(0, tile_of, col)
            folded = folded / folded.sum().clamp_min(1e-12)
            # the sketch: one averaged tail query per query head against tile-averaged keys
            keys = view.keys[h, idx_live].float()
            tile_keys = torch.zeros(n_tiles, keys.shape[-1], device=keys.device).index_add_(0, tile_of, keys)
            tile_keys = tile_keys / torch.bincount(tile_of, minlength=n_tiles).clamp_min(1)[:, None].float()
            q_bar = view.queries[h * g:(h + 1) * g].float().mean(dim=1)           # (g, D)
            sketch = (q_bar @ tile_keys.T * view.model.scale).softmax(dim=-1).mean(dim=0)
            if math.sqrt(max(_js(sketch, folded), 0.0)) < self.agree_below:
                chosen = self._tiles(sketch, col, tile_of, want)
            else:
                cells = rows.sum(dim=0)[:, idx_live]                           # (N, n_live)
                chosen = self._columns_and_diagonals(cells, qpos, view.positions[h, idx_live], col, newest, want)
            picks.append(idx_live[chosen].sort().values)
        return Keep(tuple(picks))

    def _tiles(self, sketch: torch.Tensor, col: torch.Tensor, tile_of: torch.Tensor, want: int) -> torch.Tensor:
        out: list[torch.Tensor] = []
        left = want
        for t in sketch.argsort(descending=True).tolist():
            if left <= 0:
                break
            members = torch.nonzero(tile_of == t).flatten()
            if members.numel() > left:              # the last tile only partly: its heaviest columns
                members = members[col[members].topk(left).indices]
            out.append(members)
            left -= members.numel()
        return torch.cat(out) if out else torch.empty(0, dtype=torch.long, device=col.device)

    def _columns_and_diagonals(self, cells: torch.Tensor, qpos: torch.Tensor, kpos: torch.Tensor, col: torch.Tensor,
                               newest: int, want: int) -> torch.Tensor:
        n = kpos.numel()
        # diagonal mass: attention binned by the distance between reader and read position (future cells hold 0)
        dist = (qpos.view(-1, 1) - kpos.view(1, -1)).clamp_min(0)               # (N, n)
        diag = torch.zeros(int(dist.max()) + 1, device=col.device).index_add_(0, dist.flatten(), cells.flatten())
        n_col = _lines_needed(col, self.cover)
        n_diag = _lines_needed(diag, self.cover)
        share = max(1, min(want - 1, round(want * n_col / (n_col + n_diag)))) if want > 1 else want
        chosen = set(col.topk(min(share, n)).indices.tolist())
        lookup = {int(p): i for i, p in enumerate(kpos.tolist())}
        for d in diag.argsort(descending=True).tolist():
            if len(chosen) >= want:
                break
            i = lookup.get(newest - d)
            if i is not None:
                chosen.add(i)
        if len(chosen) < want:                      # leftovers: the next heaviest columns
            for i in col.argsort(descending=True).tolist():
                if len(chosen) >= want:
                    break
                chosen.add(i)
        return torch.tensor(sorted(chosen), dtype=torch.long, device=col.device)
