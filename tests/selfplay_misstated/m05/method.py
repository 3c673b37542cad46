"""Absorb-KV: question-guided scores with average-pooled spans."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class AbsorbKV(EvictionMethod):
    name = "absorb_kv"
    query_window = 8
    question_queries = True
    kernel = 9

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="mean")            # (H_q, T)
        score = view.group(attn, "max")                 # (H_kv, T): the most interested query head
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                             count_include_pad=False)[:, 0]
        last = view.query_positions.min() if view.query_positions is not None else view.positions.max() + 1
        score = score.masked_fill(view.positions >= last, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
