"""Sink-filtered question attention (board A).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): keep the context tokens the question attends to. Many question
rows, however, put most of their mass on the attention sinks (the first tokens, StreamingLLM, Xiao et al., 2023, arXiv
2309.17453): those rows are "resting" and their small remainder is close to uniform noise, yet SnapKV sums them in
with the same weight as the rows that actually look something up. We drop them: a (query head, question query) row
whose mass on the first 4 tokens exceeds ``rest_threshold`` (0.5) is discarded before summing; if a query head has no
row left, its least-resting quarter of rows is used instead. The surviving rows are summed, averaged over the KV head's
query heads, and max-pooled over 3 tokens. The question span and the first 4 tokens are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SinkFilteredQuestion(EvictionMethod):
    name = "sink_filtered_question"
    query_window = 8
    question_queries = True
    n_sink = 4
    rest_threshold = 0.5
    kernel = 3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = view.attention()                                            # (H_q, N, T)
        sink_cols = (view.positions < self.n_sink).repeat_interleave(view.model.group_size, 0)   # (H_q, T)
        rest = (rows * sink_cols[:, None, :]).sum(-1)                       # (H_q, N)
        use = rest <= self.rest_threshold
        empty = ~use.any(dim=1)
        if bool(empty.any()):
            n = rest.shape[1]
            q = max(1, n // 4)
            calm = rest.topk(q, dim=1, largest=False).indices
            fallback = torch.zeros_like(use).scatter_(1, calm, True)
            use = torch.where(empty[:, None], fallback, use)
        summed = (rows * use[:, :, None]).sum(1)                            # (H_q, T)
        score = view.group(summed, "mean")
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        keep = (view.positions < self.n_sink) | (view.positions >= int(view.query_positions.min()))
        return Keep.from_topk(score.masked_fill(keep, float("inf")), view.budget, view.valid)
