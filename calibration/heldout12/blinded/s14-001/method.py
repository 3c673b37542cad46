"""Entropy-matched pooling (board A).

SnapKV smooths each head's question-attention scores with one max-pool kernel for all heads. Heads differ: a
retrieval head puts its mass on a handful of tokens, and widening its peaks spends the budget on neighbours it
never reads; a diffuse head spreads its mass, and a narrow kernel keeps isolated tokens out of context. We pick
the kernel per KV head from the normalised entropy H in [0, 1] of that head's question attention:

    kernel = 1 + 2 * round(4 * H)        (1 for a sharp head ... 9 for a flat one)

Scores: attention of the question span and the closing 32 prompt rows, summed over the rows, averaged over the
KV head's query heads, then max-pooled with the head's kernel. The closing 16 prompt rows and four opening
tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469), whose window scoring and pooling we keep. RocketKV
(Behnam et al., 2025, arXiv 2502.14051) already adapts the pooling kernel, to the context length; we adapt it
per head, to the spread of that head's attention.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EntropyMatchedPooling(EvictionMethod):
    name = "entropy_matched_pooling"
    query_window = 32
    question_queries = True
    opening = 4
    closing = 16
    widest = 4  # kernel 1 + 2 * widest at full entropy

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        a = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        fixed = (view.positions > view.positions.max() - self.closing) | (view.positions < self.opening)
        free = a.masked_fill(fixed, 0.0)
        p = free / free.sum(-1, keepdim=True).clamp_min(1e-12)
        ent = -(p * p.clamp_min(1e-12).log()).sum(-1) / math.log(max(2, int((~fixed[0]).sum())))
        score = torch.empty_like(a)
        for h in range(view.n_kv_heads):
            k = 1 + 2 * int(round(self.widest * float(ent[h].clamp(0, 1))))
            score[h] = F.max_pool1d(a[h][None, None], k, stride=1, padding=k // 2)[0, 0]
        score = torch.where(fixed, 1e9 + view.positions.float(), score)
        return Keep.from_topk(score, view.budget)
