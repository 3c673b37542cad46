"""Entropy-apportioned head budgets (board A, question-aware prefill).

Heads differ in how many tokens they need: a head that reads one needle needs a few slots, a head that spreads the
question's attention over a paragraph needs many. We measure that spread directly and give each KV head a share of
the layer's budget in proportion to it.

- Scores: SnapKV-style question attention (the question span and the closing 8 rows), averaged over the rows and
  over the KV head's query heads, max-pooled over 5 tokens.
- Spread: the exponential of the entropy of each head's (unpooled, renormalised) score distribution, i.e. its
  effective number of attended tokens.
- Budgets: proportional to the spread, clipped to [0.5, 2] x the layer's mean budget and rescaled so that the layer
  total stays within budget x heads (rounding down; the remainder goes to the widest heads).
- The question span and four opening tokens are kept in every head.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the scores and pooling and on StreamingLLM (Xiao et al.,
2023, arXiv 2309.17453) for the opening tokens. Ada-KV (Feng et al., 2024, arXiv 2407.11550) also gives heads
different budgets, from the mass of their top scores; using the entropy of the distribution is our change, and a
modest one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EntropyApportioned(EvictionMethod):
    name = "entropy_apportioned"
    question_queries = True
    query_window = 8
    opening = 4
    lo, hi = 0.5, 2.0

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        raw = view.group(view.attention(reduce="mean"), "mean")  # (H_kv, T)
        valid = view.valid_mask()
        p = raw * valid
        p = p / p.sum(-1, keepdim=True).clamp_min(1e-12)
        spread = torch.exp(-(p * p.clamp_min(1e-12).log()).sum(-1))  # (H_kv,)
        h_kv, b = view.n_kv_heads, view.budget
        share = spread / spread.mean()
        share = share.clamp(self.lo, self.hi)
        share = share / share.sum() * h_kv
        per = (share * b).floor().long().clamp(max=view.n_tokens)
        left = b * h_kv - int(per.sum())
        for h in share.argsort(descending=True).tolist():
            if left <= 0:
                break
            add = min(left, view.n_tokens - int(per[h]))
            per[h] += add
            left -= add
        scores = F.max_pool1d(raw[:, None], 5, stride=1, padding=2)[:, 0]
        pinned = (view.positions < self.opening) | (view.positions >= int(view.query_positions.min()))
        scores = scores.masked_fill(pinned, float("inf"))
        return Keep.from_topk(scores, per, view.valid)
