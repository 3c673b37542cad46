"""Neighbourhood-floor heavy hitters (board C, decode-time cap).

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048) for the score (attention accumulated across eviction rounds) and
on ChunkKV (Liu et al., 2025, arXiv 2502.00299) for the observation that neighbouring tokens carry meaning together.
Rather than keeping whole chunks, as ChunkKV does, this keeps a floor: the cache is cut into clusters of 16 adjacent
cached tokens, and every cluster keeps its single best token before the rest of the budget is filled by accumulated
attention. A long reasoning trace thus never loses a whole stretch of its history at once. StreamingLLM's (Xiao et al.,
2023, arXiv 2309.17453) opening tokens and a recent window (the newest 32) are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class NeighbourhoodFloor(EvictionMethod):
    name = "neighbourhood_floor"
    query_window = 64
    cluster = 16
    newest = 32
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        acc = view.recall("acc")
        seen = view.state.get("seen", -1)
        fresh = view.query_positions > seen
        if bool(fresh.any()):
            acc = acc + view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum")
        view.state["seen"] = int(view.query_positions.max())
        view.remember("acc", acc)
        counts = view.valid_mask().sum(1)
        out = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            s = acc[h, :n].clone()
            s[: self.opening] = float("inf")
            s[max(0, n - self.newest):] = float("inf")
            k = min(view.budget, n)
            keep = torch.isinf(s)
            groups = -(-n // self.cluster)
            room = k - int(keep.sum())
            if room >= groups:                                   # the floor fits: one per cluster first
                pad = torch.full((groups * self.cluster,), float("-inf"))
                pad[:n] = acc[h, :n]
                best = pad.view(groups, self.cluster).argmax(1) + torch.arange(groups) * self.cluster
                best = best[best < n]
                keep[best] = True
            rest = s.masked_fill(keep, float("-inf"))
            room = k - int(keep.sum())
            if room > 0:
                keep[rest.topk(room).indices] = True
            idx = keep.nonzero().flatten()
            if idx.numel() > k:                                   # never over the budget
                idx = s.masked_fill(~keep, float("-inf")).topk(k).indices.sort().values
            out.append(idx)
        return Keep(tuple(out))
