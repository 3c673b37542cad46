"""Tile Salience: question-aware prefill eviction at the granularity of tiles of the context."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _pad_to(x: torch.Tensor, dim: int, multiple: int) -> torch.Tensor:
    extra = (-x.shape[dim]) % multiple
    if extra == 0:
        return x
    shape = list(x.shape)
    shape[dim] = extra
    return torch.cat([x, x.new_zeros(shape)], dim=dim)


class TileSalience(EvictionMethod):
    name = "tile_salience"
    query_window = 16
    question_queries = True
    rows_per_strip = 16        # question queries per strip
    tile = 32                  # context tokens per tile (shrunk for very small budgets)

    def salience(self, view: LayerView, tile: int) -> torch.Tensor:
        probs = view.attention()                                   # (H_q, N, T)
        h_q, n, t = probs.shape
        p = _pad_to(_pad_to(probs, 1, self.rows_per_strip), 2, tile)
        strips, tiles = p.shape[1] // self.rows_per_strip, p.shape[2] // tile
        p = p.view(h_q, strips, self.rows_per_strip, tiles, tile)
        peak = p.amax(dim=(2, 4))                                  # (H_q, strips, tiles): strongest cell per tile
        crit = view.group(peak.mean(dim=1), "mean")                # (H_kv, tiles)
        return crit.repeat_interleave(tile, dim=1)[:, :t]          # back to tokens

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        tile = max(1, min(self.tile, view.budget // 4))
        score = self.salience(view, tile)
        score[:, :tile] = float("inf")                             # the opening tile
        first_q = view.query_positions.min().to(view.positions.device)
        score = score.masked_fill(view.positions >= first_q, float("inf"))
        score = score - view.positions.float() * 1e-7              # a tile that fits in part: its front first
        return Keep.from_topk(score, view.budget, view.valid)
