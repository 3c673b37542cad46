"""Peak-Normalised Vote: every question token gets the same say over which context tokens stay.

Builds on SnapKV (question/window attention summed over queries, pooled, top-k; arXiv 2404.14469) and
StreamingLLM's attention sinks (arXiv 2309.17453). New here: before the question's attention rows are summed,
each row is divided by its own maximum over the context, so a question token whose attention is diffuse
weighs as much as one whose attention is sharp, and the few question tokens with very peaky rows (often the
template's) no longer decide the whole ranking.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class PeakNormalisedVote(EvictionMethod):
    name = "peak_normalised_vote"
    question_queries = True
    sinks = 4
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        start = view.query_positions.min()
        ctx = view.positions < start                                     # (H_kv, T)
        attn = view.attention()                                          # (H_q, N, T)
        g = view.model.group_size
        ctx_q = ctx.repeat_interleave(g, dim=0)[:, None, :]
        peak = attn.masked_fill(~ctx_q, 0.0).amax(dim=-1, keepdim=True).clamp_min(1e-9)
        votes = (attn / peak).sum(dim=1)                                 # (H_q, T)
        score = view.group(votes, "mean")
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(~ctx, float("inf"))                    # the question itself stays
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
