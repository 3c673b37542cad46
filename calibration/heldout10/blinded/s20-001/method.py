"""Split-window agreement (board B_online).

A token that only the very last context queries attend to is often local chatter; one that both the earlier and the
later half of the observation window attend to is a stable reference. We split the last 64 context queries into two
halves, normalise each half's attention (summed over its queries, averaged over the query group) to a distribution,
and score tokens by the geometric mean of the two halves plus 0.2 x their arithmetic mean (so tokens that only one
half sees are not zeroed). Max-pooled over 3 tokens; the first 4 and the last 24 context tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) and StreamingLLM (Xiao et al., 2023, arXiv 2309.17453); the
agreement score is ours.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

WINDOW = 64
SINKS = 4
RECENT = 24


class SplitWindowAgreement(EvictionMethod):
    name = "split_window_agreement"
    query_window = WINDOW

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()                                             # (H_q, N, T)
        half = att.shape[1] // 2
        early = view.group(att[:, :half].sum(1), "mean")
        late = view.group(att[:, half:].sum(1), "mean")
        early = early / early.sum(-1, keepdim=True).clamp_min(1e-12)
        late = late / late.sum(-1, keepdim=True).clamp_min(1e-12)
        score = (early * late).sqrt() + 0.2 * 0.5 * (early + late)
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        last = view.positions.max(dim=1, keepdim=True).values
        fixed = (view.positions < SINKS) | (view.positions > last - RECENT)
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget)
