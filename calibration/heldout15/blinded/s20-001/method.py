"""Successor completion (board A, question-aware prefill).

A retrieval answer is rarely one token: the question's attention lands on the start of the needle ("the special
number is") and the value itself follows. Ranking tokens independently spends the budget on many starts and keeps
few continuations. We keep the starts and then complete them.

- Scores: the question's attention (the question span and the closing 8 rows, causal), averaged over the rows and
  over the KV head's query heads (SnapKV-style, no pooling).
- Half of the free budget goes to the top-scoring tokens (anchors).
- The other half goes to successors: each token within 4 positions after an anchor is a candidate with priority
  anchor score x 0.6^distance (the best anchor counts when several reach it); the highest priorities are kept.
  If there are fewer candidates than slots, the rest go by score.
- The question span and four opening tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469); its pooling widens a keep symmetrically, while here the
widening is one-sided and decays with distance. The anchor/successor split is our change, and a small one.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SuccessorCompletion(EvictionMethod):
    name = "successor_completion"
    question_queries = True
    query_window = 8
    reach = 4
    decay = 0.6
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = view.group(view.attention(reduce="mean"), "mean")
        qstart = int(view.query_positions.min())
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            s = scores[h, :n]
            pos = view.positions[h, :n]
            keep = (pos < self.opening) | (pos >= qstart)
            free = view.budget - int(keep.sum())
            if free > 0:
                n_anchor = max(1, free // 2)
                anchors = s.masked_fill(keep, float("-inf")).topk(min(n_anchor, int((~keep).sum()))).indices
                keep[anchors] = True
                prio = torch.zeros(n)
                for d in range(1, self.reach + 1):
                    tgt = anchors + d
                    ok = tgt < n
                    prio.scatter_reduce_(0, tgt[ok], s[anchors[ok]] * self.decay ** d, reduce="amax")
                left = view.budget - int(keep.sum())
                cand = (prio > 0) & ~keep
                take = min(left, int(cand.sum()))
                if take > 0:
                    keep[prio.masked_fill(~cand, float("-inf")).topk(take).indices] = True
                left = view.budget - int(keep.sum())
                if left > 0:
                    keep[s.masked_fill(keep, float("-inf")).topk(min(left, int((~keep).sum()))).indices] = True
            idx = torch.nonzero(keep).flatten()
            out.append(idx[-view.budget:] if idx.numel() > view.budget else idx)
        return Keep(tuple(out))
