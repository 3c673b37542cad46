"""Staggered stairs (board C, decode-time).

Each layer remembers a different stretch of the past. When a layer fills up it keeps its anchors (the first
tokens), its newest stretch, and one contiguous stair of the older middle; the stair's offset climbs with
depth, so consecutive layers hold overlapping but shifted stretches and the stack as a whole still reaches far
back. Compaction repeats at every eviction, so the stairs keep sliding as the trace grows.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class StaggeredStairs(EvictionMethod):
    name = "staggered_stairs"
    anchors = 4
    newest_share = 0.3
    steps = 6                 # distinct stair offsets before the pattern repeats with depth

    def _stair(self, n_mid: int, room: int, layer: int) -> tuple[int, int]:
        if room <= 0 or n_mid <= room:
            return 0, max(0, min(room, n_mid))
        slack = n_mid - room
        edges = torch.linspace(0, slack, self.steps + 1)
        rung = torch.bucketize(torch.tensor(float(layer % self.steps)), torch.arange(self.steps).float(), right=True) - 1
        start = int(edges[int(rung)].round())
        return start, room

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            n = idx.numel()
            b = min(view.budget, n)
            if b >= n:
                out.append(idx)
                continue
            a = min(self.anchors, b)
            newest = min(max(1, int(self.newest_share * b)), b - a)
            room = b - a - newest
            n_mid = n - a - newest
            start, width = self._stair(n_mid, room, view.layer)
            mid = idx[a + start: a + start + width]
            out.append(torch.cat([idx[:a], mid, idx[n - newest:]]))
        return Keep(tuple(out))
