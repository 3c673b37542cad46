"""Focus-weighted window votes (board B_online, query-agnostic prefill).

SnapKV-style window scoring sums the attention of the context's closing rows, so a row that spreads its
attention thinly over everything votes as much, in total, as a row that points at one token. Without the
question, the rows that point are the informative ones. Here each closing row's attention is weighted by its
focus before summing: one minus its normalised entropy (entropy divided by the log of the number of keys the
row can see), squared. The sums are averaged over the query heads of each KV head and lightly max-pooled
(3 positions); the first 4 tokens and the closing rows (at most half the budget) are kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class FocusWeightedVotes(EvictionMethod):
    name = "focus_weighted_votes"
    query_window = 48
    sinks = 4
    pool = 3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                              # (H_q, N, T)
        entropy = -(attn * attn.clamp_min(1e-12).log()).sum(dim=-1)          # (H_q, N)
        visible = (attn > 0).sum(dim=-1).clamp_min(2).float()
        focus = (1.0 - entropy / visible.log()).clamp(0.0, 1.0).pow(2)       # (H_q, N)
        votes = torch.einsum("hn,hnt->ht", focus, attn)
        score = view.group(votes, "mean")
        score = F.max_pool1d(score[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0]
        valid = view.valid_mask()
        first = view.positions.masked_fill(~valid, 1 << 40).amin(dim=1, keepdim=True)
        score = score.masked_fill(view.positions < first + self.sinks, float("inf"))
        counts = valid.sum(dim=1)
        pinned = min(view.queries.shape[1], view.budget // 2)            # closing rows kept, up to half the budget
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - pinned): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
