"""Novelty-weighted window rows (board B_online, query-agnostic prefill).

On board B the question is not known when the context is compressed, so the closing rows of the context stand in
for it (SnapKV's window, Li et al., 2024). Most of those rows are ordinary continuation queries that look much like
each other; the few that differ from the rest are the ones that probe the context in a way the others do not. We
weight each row by its novelty: one minus its cosine similarity to the mean query of the window (per query head),
floored at 0.05 and normalised to sum to one. A token's score is the novelty-weighted sum of the rows' causal
attention, averaged over the KV head's query heads and average-pooled over 5 tokens. The closing 32 rows' own tokens
and the 4 opening tokens (StreamingLLM's sinks) are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class NoveltyWeightedRows(EvictionMethod):
    name = "novelty_weighted_rows"
    query_window = 32
    floor = 0.05
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        q = view.queries.float()  # (H_q, N, D)
        centre = q.mean(dim=1, keepdim=True)
        novelty = (1 - F.cosine_similarity(q, centre.expand_as(q), dim=-1)).clamp_min(self.floor)  # (H_q, N)
        novelty = novelty / novelty.sum(dim=1, keepdim=True)
        attn = view.attention()  # (H_q, N, T), causal
        per_head = torch.einsum("hn,hnt->ht", novelty, attn)
        score = view.group(per_head, "mean")
        score = F.avg_pool1d(score[:, None], 5, stride=1, padding=2, count_include_pad=False)[:, 0]
        fixed = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
