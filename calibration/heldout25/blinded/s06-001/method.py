"""Question contrast (board A, question-aware prefill).

Builds on SnapKV (Li et al., 2024, arXiv:2404.14469): rank the context by the attention of the prompt's question
rows. A token that *every* question row attends to (a sink, a separator, the first line of a list) wins whether
or not the question needs it: that attention is shared, structural. Question contrast scores a token by the
attention the question rows give it beyond what all of them give it in common: the rows' mean minus a share of
their minimum. This is our idea; we have not seen the subtraction used for eviction (NACL, arXiv:2408.03675,
also uses the question as proxy tokens, but sums their attention).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class QuestionContrast(EvictionMethod):
    name = "question_contrast"
    question_queries = True
    weight = 0.8                 # share of the common (row-minimum) attention that is subtracted
    pool = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()                                   # (H_q, N, T), causal
        qpos = view.query_positions
        # only the context (before the question) is compared; rows see all of it
        mean = probs.mean(dim=1)
        common = probs.amin(dim=1)
        contrast = mean - self.weight * common
        score = view.group(contrast, "mean")
        score = F.max_pool1d(score[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0]
        score = score.masked_fill(view.positions >= int(qpos.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
