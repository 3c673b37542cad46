"""Staggered Spans: a decode-time cache in which each layer keeps a different stretch of the older context.

No attention is read. Every layer keeps its first tokens and its newest ones; the rest of its budget holds one
contiguous stretch of the older tokens, and the stretch's place slides with depth, so that consecutive layers
hold overlapping, shifted stretches and the stack as a whole still covers the whole trace. Each time a layer
is full again the same rule is applied to what it holds.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class StaggeredSpans(EvictionMethod):
    name = "staggered_spans"
    sinks = 4
    newest_share = 0.25
    rungs = 6

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        counts = view.valid_mask().sum(dim=1)
        rung = view.layer % self.rungs
        out = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            if b >= n:
                out.append(torch.arange(n, device=view.keys.device))
                continue
            head = min(self.sinks, b)
            tail = min(int(b * self.newest_share), b - head)
            mid_room = b - head - tail
            lo, hi = head, n - tail                       # the older stretch
            start = lo + ((hi - lo - mid_room) * rung) // max(1, self.rungs - 1) if hi - lo > mid_room else lo
            idx = torch.cat([torch.arange(0, head), torch.arange(start, start + mid_room),
                             torch.arange(n - tail, n)]).to(view.keys.device)
            out.append(torch.unique(idx)[:b])
        return Keep(tuple(out))
