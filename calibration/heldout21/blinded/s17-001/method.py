"""Span-granular reconstruction scores (board B_offline).

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): each cached pair is scored by the largest attention it gets
from the queries of the harness's one-off reconstruction pass (max over the repeat queries and over the query heads of
its group). And on ChunkKV (Liu et al., 2025, arXiv 2502.00299): keeping contiguous pieces preserves meaning better
than isolated tokens. ChunkKV ranks chunks by summed importance; here a span of 8 tokens is ranked by its best token
(the max of KVzip's scores), so a span is kept when any of its tokens must be reproducible. Whole spans are kept best
first while they fit; the leftover slots go to the best single tokens outside the kept spans. The first 4 tokens are
pinned. Without a reconstruction pass the newest tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SpanReconstruction(EvictionMethod):
    name = "span_reconstruction"
    reconstruction_queries = True
    span = 8
    pinned = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        tok = view.group(view.attention(view.queries, reduce="max"), "max")        # (H_kv, T)
        counts = view.valid_mask().sum(1)
        out = []
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            s = tok[h, :n].clone()
            s[: self.pinned] = float("inf")
            spans = -(-n // self.span)
            pad = torch.full((spans * self.span,), float("-inf"), device=s.device)
            pad[:n] = s
            best = pad.view(spans, self.span).amax(1)
            keep = torch.zeros(n, dtype=torch.bool, device=s.device)
            k = min(view.budget, n)
            for j in best.argsort(descending=True).tolist():
                lo, hi = j * self.span, min(n, (j + 1) * self.span)
                if int(keep.sum()) + (hi - lo) > k:
                    break
                keep[lo:hi] = True
            room = k - int(keep.sum())
            if room > 0:
                keep[s.masked_fill(keep, float("-inf")).topk(room).indices] = True
            out.append(keep.nonzero().flatten())
        return Keep(tuple(out))
