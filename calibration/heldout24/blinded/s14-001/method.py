"""Centred window (board B_online, query-agnostic prefill).

Builds on query-agnostic SnapKV (SnapKV, Li et al., 2024, arXiv 2404.14469, as evaluated without the question in
KVzip, arXiv 2505.23416): the context's closing rows rank the tokens. On board B those rows are ordinary text,
and most of what they share is a common direction that points at the same few tokens (sinks, punctuation)
whatever the question will be. Here the window's mean query, per query head, is partly subtracted before the
attention is taken, so what remains is what the closing rows disagree about, closer to a question's
specificity. The opening tokens are kept too (StreamingLLM's attention sinks, arXiv 2309.17453), since centring
takes the sink's share away. The idea of scoring against a mean direction echoes KeyDiff (arXiv 2504.15364), which does it on
the key side; this does it on the query side and keeps attention as the score. The window itself is kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class CentredWindow(EvictionMethod):
    name = "centred_window"
    query_window = 32
    centring = 0.7
    kernel = 7
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries.float()
        centred = q - self.centring * q.mean(dim=1, keepdim=True)
        centred = centred * (q.norm(dim=-1, keepdim=True) / centred.norm(dim=-1, keepdim=True).clamp_min(1e-6))
        att = view.attention(centred, reduce="sum")                 # (H_q, T)
        score = view.group(att, "mean")
        score = F.max_pool1d(score[:, None], self.kernel, 1, self.kernel // 2)[:, 0]
        # the window, and the opening tokens: centring takes away the sink's share, and the model still needs it
        fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.opening)
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
