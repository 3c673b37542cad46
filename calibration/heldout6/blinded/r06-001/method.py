"""Contrastive question attention (board A).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): tokens are ranked by the attention the end of the prompt (on
board A, the question) pays them. Much of that attention is generic: formatting tokens, the sinks and recent
context are read by almost every query, question or not. This method subtracts a reference: the same attention
computed from the queries just before the end of the prompt (rows 128 to 64 positions back), which read the
context without the question's intent. The score is max(0, probe - reference) + 0.1 x probe, where the probe is
the mean attention of the last 24 queries and the reference the mean of the 64 earlier ones, both averaged over
the KV head's query heads, then max-pooled over 3 tokens. The last 64 tokens and the first 4 (StreamingLLM, Xiao
et al., 2023, arXiv 2309.17453) are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ContrastiveQuestionAttention(EvictionMethod):
    name = "contrastive_question_attention"
    query_window = 128
    question_queries = True
    probe_rows = 24
    reference_rows = (128, 64)     # from this many rows back to this many rows back
    base_weight = 0.1
    keep_tail = 64
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                                          # (H_q, N, T)
        n = attn.shape[1]
        probe = view.group(attn[:, max(0, n - self.probe_rows):].mean(dim=1), "mean")
        lo, hi = max(0, n - self.reference_rows[0]), max(0, n - self.reference_rows[1])
        if hi > lo:
            ref = view.group(attn[:, lo:hi].mean(dim=1), "mean")
        else:
            ref = torch.zeros_like(probe)
        score = (probe - ref).clamp_min(0) + self.base_weight * probe
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        tail_from = int(view.query_positions.max()) - self.keep_tail + 1
        score = score.masked_fill((view.positions >= tail_from) | (view.positions < self.n_sink), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
