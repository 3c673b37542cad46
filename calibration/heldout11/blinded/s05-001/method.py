"""Geometric-stride retention (board B_online).

A score-free cache layout. The context is cut into equal blocks; the layer keeps the opening block, the block
being written, and the blocks that lie 1, 2, 4, 8, ... blocks behind it. Stacked over layers, information can hop
from any block to the end in a logarithmic number of steps, so no region of the context is ever out of reach,
whatever the question turns out to be. The block size is the largest power of two for which the layout fits the
budget; whatever budget is left widens the recent end. Nothing is computed from attention: it costs nothing and
never looks at the data.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _offsets(last: int) -> list[int]:
    out, step = [0], 1
    while step <= last:
        out.append(step)
        step *= 2
    return out


class GeometricStride(EvictionMethod):
    name = "geometric_stride"
    max_block = 64

    def _layout(self, t: int, budget: int) -> torch.Tensor:
        size = self.max_block
        while size > 1:
            last = (t - 1) // size
            blocks = {0} | {last - o for o in _offsets(last) if last - o >= 0}
            if len(blocks) * size <= budget:
                break
            size //= 2
        last = (t - 1) // size
        chosen = sorted({0} | {last - o for o in _offsets(last) if last - o >= 0})
        keep = torch.zeros(t, dtype=torch.bool)
        for blk in chosen:
            keep[blk * size: min(t, (blk + 1) * size)] = True
        if int(keep.sum()) > budget:  # even single tokens do not fit: opening token + newest
            keep.zero_()
            keep[0] = True
            keep[t - max(0, budget - 1):] = True
        spare = budget - int(keep.sum())
        if spare > 0:
            free = (~keep).nonzero().flatten()
            keep[free[free.numel() - spare:]] = True
        return keep.nonzero().flatten()

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        idx = self._layout(t, b).to(view.keys.device)
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
