"""Envelope-gated segment retention (board C, decode-time).

A reasoning trace is written in runs: a derivation step, a restated quantity, a short aside. When a layer is full we
give back the runs the trace has stopped reading, never single tokens out of a run it still needs. Each head's cache
is cut into aligned segments of 16 entries, and every segment is summarised by its envelope: the channel-wise
maximum and minimum of its keys, together with its centroid. The newest queries, averaged over the query heads that
share the KV head, are matched against the three summaries; the three matches are added into one segment logit,
a softmax over the segments turns the logits into a reading share per query, and the shares are averaged over the
newest 8 queries. Whole segments are kept best-first; the segment holding the newest entries is always kept, and a
remainder smaller than a segment is taken from the tail of the next-ranked one.

Contrast: Quest (Tang et al., 2024) bounds each page by a per-channel upper bound and reads pages for one step; we
use a smooth, softmax-normalised reading share over all three summaries, and evict for good.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _segment_stats(keys: torch.Tensor, seg: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(S, D) envelope top, envelope bottom and centroid of consecutive ``seg``-entry runs (last run may be short)."""
    t, d = keys.shape
    n_seg = -(-t // seg)
    pad = n_seg * seg - t
    k = keys.float()
    hi = torch.nn.functional.pad(k, (0, 0, 0, pad), value=float("-inf")).view(n_seg, seg, d).amax(dim=1)
    lo = torch.nn.functional.pad(k, (0, 0, 0, pad), value=float("inf")).view(n_seg, seg, d).amin(dim=1)
    counts = torch.full((n_seg,), float(seg), device=keys.device)
    if pad:
        counts[-1] = seg - pad
    mid = torch.nn.functional.pad(k, (0, 0, 0, pad)).view(n_seg, seg, d).sum(dim=1) / counts[:, None]
    return hi, lo, mid


class EnvelopeGatedSegments(EvictionMethod):
    name = "envelope_gated_segments"
    query_window = 8
    seg = 16

    def _reading_share(self, view: LayerView, head: int, idx: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        q = view.queries[head * g:(head + 1) * g].float().mean(dim=0)  # (N, D): the group's pooled queries
        hi, lo, mid = _segment_stats(view.keys[head, idx], self.seg)
        logit = (q @ hi.T + q @ lo.T + q @ mid.T) * (view.model.scale / 3.0)  # (N, S)
        return logit.softmax(dim=-1).mean(dim=0)  # (S,)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        keep = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            n = idx.numel()
            b = min(view.budget, n)
            if b >= n or view.queries is None:
                keep.append(idx[n - b:])
                continue
            share = self._reading_share(view, h, idx)
            share[-1] = float("inf")  # the segment being written stays
            order = share.argsort(descending=True)
            chosen: list[torch.Tensor] = []
            left = b
            for s in order.tolist():
                lo, hi = s * self.seg, min(n, (s + 1) * self.seg)
                width = hi - lo
                if width <= left:
                    chosen.append(torch.arange(lo, hi, device=idx.device))
                    left -= width
                else:
                    if left > 0:
                        chosen.append(torch.arange(hi - left, hi, device=idx.device))
                    left = 0
                if left == 0:
                    break
            pick = torch.cat(chosen) if chosen else idx[:0]
            keep.append(idx[pick.sort().values])
        return Keep(tuple(keep))
