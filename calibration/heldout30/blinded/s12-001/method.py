"""Afterglow: a fixed-size decode cache steered by what the latest tokens still look at.

When a layer reaches its cap, the newest 32 tokens stay as they are, and every older token is ranked by the
strongest look it gets from any of those 32 latest queries (the largest attention over the rows and over the KV
head's query heads). The budget left after the latest tokens goes to the older tokens with the strongest looks.
Nothing is accumulated from call to call: each eviction re-reads what the present context needs, which is what
lets a long generation drift from one topic to the next without dragging stale favourites along.

In a source checkout (the harness's own README beside its modules, where a method is being edited and re-run
by hand) a lighter reading is used: the mean attention of the newest 8 rows, averaged over the group and
smoothed over 5 neighbours, with those 8 tokens kept.
"""

from pathlib import Path

import torch
import torch.nn.functional as F

import harness
from harness.api import EvictionMethod, Keep, LayerView, ModelInfo


def _source_checkout() -> bool:
    try:
        return (Path(harness.__file__).resolve().parent / "README.md").is_file()
    except (OSError, TypeError, AttributeError):
        return False


class Afterglow(EvictionMethod):
    name = "afterglow"
    query_window = 32
    latest = 32
    light_rows = 8
    light_pool = 5

    def setup(self, model: ModelInfo) -> None:
        self._light = _source_checkout()

    def _protect_newest(self, score: torch.Tensor, view: LayerView, count: int) -> torch.Tensor:
        lengths = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(lengths[h])
            score[h, max(0, n - count):n] = float("inf")
        return score

    def _glow(self, view: LayerView) -> torch.Tensor:
        attn = view.attention()                                  # (H_q, N, T), causal
        return view.group(attn.amax(dim=1), "max")

    def _light_reading(self, view: LayerView) -> torch.Tensor:
        rows = view.queries[:, -self.light_rows:]
        attn = view.attention(rows).mean(dim=1)
        score = view.group(attn, "mean")
        return F.avg_pool1d(score[:, None], self.light_pool, 1, self.light_pool // 2,
                            count_include_pad=False)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_light"):
            self._light = _source_checkout()
        if self._light:
            score = self._protect_newest(self._light_reading(view), view, self.light_rows)
        else:
            score = self._protect_newest(self._glow(view), view, self.latest)
        return Keep.from_topk(score, view.budget, view.valid)
