"""Age-stratified retention for decode-time caps (board C).

Accumulated-attention eviction (H2O, Zhang et al., 2023, arXiv 2306.14048) tends to keep the oldest tokens, which have
had the most queries to collect attention from, and to starve the middle of a long reasoning trace. We stratify the
cache by age instead: tokens are grouped into buckets of doubling width counted back from the newest token (16, 16,
32, 64, 128, ... positions), and each bucket is guaranteed a quota proportional to the square root of its size, so old
regions keep a presence without crowding out the recent ones. Inside a bucket tokens compete on decayed accumulated
attention (x0.9 per eviction round, a forgetting factor in the spirit of A2SF, arXiv 2407.20485). A bucket that cannot
fill its quota passes the rest to the next younger bucket. The first 4 tokens (attention sinks, StreamingLLM, arXiv
2309.17453) and the newest 8 are always kept.
"""

from __future__ import annotations

import math

import torch

from harness import EvictionMethod, Keep, LayerView


def age_buckets(ages: torch.Tensor, first: int) -> torch.Tensor:
    """Bucket id per token from its age (0 = newest): [0, first), [first, 2 first), [2 first, 4 first), ..."""
    b = torch.zeros_like(ages)
    over = ages >= first
    b[over] = torch.floor(torch.log2(ages[over].double() / first)).long() + 1
    return b


class AgeStratifiedRetention(EvictionMethod):
    name = "age_stratified_retention"
    query_window = 64
    first_bucket = 16
    decay = 0.9
    n_sink = 4
    newest = 8

    def _heat(self, view: LayerView) -> torch.Tensor:
        heat = view.recall("heat") * self.decay
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                heat = heat + view.group(view.attention(view.queries[:, fresh], reduce="sum"), "mean")
                view.state["seen"] = int(view.query_positions.max())
        view.remember("heat", heat)
        return heat

    def select(self, view: LayerView) -> Keep:
        heat = self._heat(view)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            n = real.numel()
            budget = min(view.budget, n)
            pos = view.positions[h, real]
            forced = (pos < self.n_sink) | (torch.arange(n, device=pos.device) >= n - self.newest)
            keep = forced.clone()
            room = budget - int(forced.sum())
            if room > 0:
                ages = int(pos.max()) - pos
                bucket = age_buckets(ages, self.first_bucket)
                ids = sorted(set(bucket[~forced].tolist()), reverse=True)         # oldest bucket first
                sizes = {i: int(((bucket == i) & ~forced).sum()) for i in ids}
                roots = {i: math.sqrt(sizes[i]) for i in ids}
                norm = sum(roots.values())
                carry = 0
                for i in ids:
                    quota = int(room * roots[i] / norm) + carry
                    members = torch.nonzero((bucket == i) & ~forced).flatten()
                    take = min(quota, members.numel())
                    if take:
                        top = heat[h, real[members]].topk(take).indices
                        keep[members[top]] = True
                    carry = quota - take
                left = budget - int(keep.sum())
                if left > 0:                                           # rounding leftovers: best remaining heat
                    rest = torch.nonzero(~keep).flatten()
                    top = heat[h, real[rest]].topk(min(left, rest.numel())).indices
                    keep[rest[top]] = True
            idx = real[keep]
            if idx.numel() > budget:
                idx = idx[-budget:]
            out.append(idx)
        return Keep(tuple(out))
