"""Coarse-to-fine: sum to shortlist, peak to decide (board A, question in the prefill).

Two passes over the same observation queries (the question span and the closing 16 prompt rows). The coarse pass
is SnapKV's: attention summed over the rows, mean over the KV head's query heads; it shortlists twice the budget.
The fine pass re-ranks the shortlist by peak attention: the largest weight any single observation query of any
query head of the group gave the token. A token that one question word looks at hard beats one that every row
glances at, but only among tokens the summed score already found plausible.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the observation window and the summed score; taking the
max over queries is the aggregation KVzip (Kim et al., 2025, arXiv 2505.23416) uses for its repeat pass. Using it
as a second-stage re-rank of a SnapKV shortlist is our change, and a small one.
"""

from dataclasses import dataclass

import torch

from harness import EvictionMethod, Keep, LayerView


@dataclass(frozen=True)
class Stages:
    widen: float = 2.0      # shortlist size as a multiple of the budget
    pin_observation: bool = True


class CoarseSumFinePeak(EvictionMethod):
    name = "coarse_sum_fine_peak"
    query_window = 16
    question_queries = True
    cfg = Stages()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        summed = view.group(view.attention(reduce="sum"), "mean")
        peak = view.attention(reduce="max").reshape(view.n_kv_heads, g, -1).amax(dim=1)
        pinned = view.positions >= view.query_positions.min() if self.cfg.pin_observation else torch.zeros_like(valid)
        neg = float("-inf")
        summed = summed.masked_fill(~valid, neg)
        peak = peak.masked_fill(~valid, neg)
        out = []
        for h in range(view.n_kv_heads):
            n_h = int(valid[h].sum())
            k = min(view.budget, n_h)
            must = torch.nonzero(pinned[h] & valid[h]).flatten()[-k:] if k else pinned[h].nonzero().flatten()[:0]
            room = k - must.numel()
            wide = min(n_h, int(round(self.cfg.widen * k)))
            coarse = summed[h].clone()
            coarse[must] = neg
            short = coarse.topk(max(0, min(wide, n_h - must.numel()))).indices
            fine = peak[h].gather(0, short)
            chosen = short[fine.topk(min(room, short.numel())).indices]
            out.append(torch.cat([must, chosen]).unique())
        return Keep(tuple(out))
