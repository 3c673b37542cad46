"""Multi-scale window vote (board B_online).

Which context queries should stand in for the unknown question? The last 8 say what the end of the context is
about; the last 128 cover a longer stretch. We let three windows vote: the attention of the last 8, 32 and 128
context queries (summed per window, averaged over the query group) is turned into within-head ranks, and the ranks
are averaged (a Borda count), then average-pooled over 5 tokens. The first 4 tokens and the last 32 context tokens
are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): window attention and pooling; StreamingLLM (Xiao et al.,
2023, arXiv 2309.17453): sinks and the recent window. The multi-scale vote is ours.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

SCALES = (8, 32, 128)
SINKS = 4
RECENT = 32


class MultiScaleVote(EvictionMethod):
    name = "multi_scale_vote"
    query_window = max(SCALES)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n_q = view.queries.shape[1]
        full = view.attention()                                            # (H_q, N, T), causal
        votes = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for w in SCALES:
            w = min(w, n_q)
            s = view.group(full[:, n_q - w:].sum(dim=1), "mean")
            votes += s.argsort(-1).argsort(-1).float()
        votes = F.avg_pool1d(votes[:, None] / len(SCALES), 5, stride=1, padding=2)[:, 0]
        last = view.positions.max(dim=1, keepdim=True).values
        fixed = (view.positions < SINKS) | (view.positions > last - RECENT)
        return Keep.from_topk(votes.masked_fill(fixed, float("inf")), view.budget)
