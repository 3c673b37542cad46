"""Repeat-pass maxima with a segment floor (board B_offline).

KVzip's repeat pass is the best query-agnostic signal on this board: the model re-reads the context after a
"repeat the previous context" instruction, and a token's score is the most attention any of those queries pays it.
Its maximum is sharp, and on contexts with a few very salient stretches it spends most of the budget there,
leaving long stretches with nothing. A question about one of those stretches then has nothing to read. We reserve
a floor for every stretch.

- Scores: the repeat pass's queries (``reconstruction_queries``), causal attention maximised over the queries and
  over the KV head's query heads (KVzip's score, in its per-layer form).
- Floor: a quarter of the budget is split evenly over segments of 128 tokens; each segment keeps its own best tokens
  up to its share.
- The remaining three quarters go to the best tokens by score over the whole context.
- Four opening tokens are always kept.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416) for the repeat pass and its score. The segment floor is our
change, and a small one.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SegmentFloorRepeat(EvictionMethod):
    name = "segment_floor_repeat"
    reconstruction_queries = True
    query_window = 32  # used only where no repeat pass is offered
    segment = 128
    floor_share = 0.25
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = view.group(view.attention(reduce="max"), "max")
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            s = scores[h, :n]
            keep = view.positions[h, :n] < self.opening
            floor = int(view.budget * self.floor_share)
            n_seg = -(-n // self.segment)
            each = floor // max(1, n_seg)
            if each > 0:
                for j in range(n_seg):
                    lo, hi = j * self.segment, min(n, (j + 1) * self.segment)
                    seg = s[lo:hi].masked_fill(keep[lo:hi], float("-inf"))
                    take = min(each, int((~keep[lo:hi]).sum()))
                    if take > 0:
                        keep[lo + seg.topk(take).indices] = True
            left = view.budget - int(keep.sum())
            if left > 0:
                keep[s.masked_fill(keep, float("-inf")).topk(min(left, int((~keep).sum()))).indices] = True
            idx = torch.nonzero(keep).flatten()
            out.append(idx[-view.budget:] if idx.numel() > view.budget else idx)
        return Keep(tuple(out))
