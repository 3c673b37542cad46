"""Spread-out picks (board A, question-aware prefill).

SnapKV (Li et al., 2024, arXiv:2404.14469) max-pools its window attention so that a kept entry brings its
neighbours along: at a tight budget that spends many slots on one region. Spread-out picks does the opposite at the
selection step: entries are taken greedily by question attention, and every pick damps the scores of its nearest
neighbours (a soft non-maximum suppression along positions, borrowed from object detection's Soft-NMS, Bodla et
al., 2017). Neighbours can still win if they are strong on their own. Ours as far as we know for KV eviction.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class SpreadOutPicks(EvictionMethod):
    name = "spread_out_picks"
    query_window = 16
    question_queries = True
    reach = 2              # neighbours on each side that a pick damps
    damp = 0.5             # factor applied to a damped neighbour's score

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(view.attention(reduce="sum"), "mean")
        valid = view.valid_mask()
        first_q = int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            s = score[h, live].clone().cpu()
            pos = view.positions[h, live].cpu()
            taken = pos >= first_q                                    # the question and window stay
            if int(taken.sum()) >= view.budget:
                out.append(live[pos.argsort(descending=True)[: view.budget].to(live.device)].sort().values)
                continue
            s[taken] = float("-inf")
            for _ in range(view.budget - int(taken.sum())):
                i = int(s.argmax())
                if s[i] == float("-inf"):
                    break
                taken[i] = True
                s[i] = float("-inf")
                lo, hi = max(0, i - self.reach), min(s.numel(), i + self.reach + 1)
                s[lo:hi] = torch.where(torch.isfinite(s[lo:hi]), s[lo:hi] * self.damp, s[lo:hi])
            out.append(live[taken.nonzero().flatten().to(live.device)].sort().values)
        return Keep(tuple(out))
