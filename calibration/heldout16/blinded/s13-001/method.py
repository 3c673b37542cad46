"""Widening-stride retention (board C, decode-time).

Counted back from the newest entry, a head's history is cut into segments that double in length: w, 2w, 4w, ...
Segment i keeps one entry in every 2**i, so every segment costs the same w entries and the history thins out
geometrically with age while still reaching its beginning. Heads do not all sample the same entries: in segment i,
head h keeps the entries whose offset inside the segment is congruent to h modulo 2**i, so the heads of a layer
cover complementary phases of the older history. w is the largest width for which the segments needed to reach the
oldest entry fit the budget.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _width(n: int, b: int) -> tuple[int, int]:
    for segs in range(1, 64):
        w = b // segs
        if w < 1:
            break
        if w * (2 ** segs - 1) >= n:
            return w, segs
    return max(1, b // 63), 63


class WideningStride(EvictionMethod):
    name = "widening_stride"
    query_window = 8

    def _pattern(self, n: int, b: int, head: int, device) -> torch.Tensor:
        if b >= n:
            return torch.arange(n, device=device)
        w, segs = _width(n, b)
        age = torch.arange(n - 1, -1, -1, device=device)  # 0 = newest
        keep = torch.zeros(n, dtype=torch.bool, device=device)
        start = 0
        for i in range(segs):
            stride, span = 2 ** i, w * 2 ** i
            inside = (age >= start) & (age < start + span)
            keep |= inside & ((age - start) % stride == head % stride)
            start += span
        idx = torch.nonzero(keep).flatten()
        if idx.numel() > b:
            idx = idx[idx.numel() - b:]
        return idx

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            out.append(real[self._pattern(real.numel(), min(view.budget, real.numel()), h, real.device)])
        return Keep(tuple(out))
