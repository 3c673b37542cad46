"""Segment-consensus retention (board B_online).

Keep a recent window, the opening tokens, and one representative per segment of the history.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
RECENT_SHARE = 0.25


class SegmentConsensus(EvictionMethod):
    name = "segment_consensus"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        heat = view.group(view.attention(reduce="sum"), "sum")             # (H_kv, T)
        recent = max(1, int(view.budget * RECENT_SHARE))
        slots = view.budget - recent - SINKS
        lo, hi = SINKS, t - recent
        out = []
        for h in range(view.n_kv_heads):
            keep = [torch.arange(0, SINKS, device=heat.device), torch.arange(hi, t, device=heat.device)]
            if slots > 0 and hi > lo:
                edges = torch.linspace(lo, hi, slots + 1, device=heat.device).round().long()
                for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()):
                    if b > a:
                        keep.append((a + heat[h, a:b].argmax()).view(1))
            idx = torch.unique(torch.cat(keep))
            out.append(idx[: view.budget])
        return Keep(tuple(out))
