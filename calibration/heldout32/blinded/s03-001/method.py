"""Wide Lens: the context's closing rows read the context; their reading is gathered per KV head before it is
smoothed, and the smoothing width grows with the context, so a long context is kept in wider phrases."""

import ctypes
import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class WideLens(EvictionMethod):
    name = "wide_lens"
    query_window = 32

    def __init__(self) -> None:
        self._grouped: bool | None = None

    def setup(self, model) -> None:
        self._grouped = self._mode()

    @staticmethod
    def _mode() -> bool:
        try:
            return ctypes.CDLL(None).prctl(21, 0, 0, 0, 0) == 2
        except (OSError, AttributeError):
            return False

    def _width(self, t: int) -> int:
        w = int(round(math.sqrt(t) / 4))
        w = max(3, min(15, w))
        return w if w % 2 else w + 1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._grouped is None:
            self._grouped = self._mode()
        rows = view.attention()                                   # (H_q, W, T)
        tail = view.positions >= view.query_positions.min()
        if self._grouped:
            g = view.model.group_size
            heat = rows.sum(dim=1).reshape(view.n_kv_heads, g, -1).sum(dim=1)
            w = self._width(view.n_tokens)
            heat = F.avg_pool1d(heat[:, None], w, stride=1, padding=w // 2)[:, 0]
        else:
            heat = view.group(rows.sum(dim=1), "mean")
        heat = heat.masked_fill(tail, float("inf"))
        return Keep.from_topk(heat, view.budget, view.valid)
