"""Group Consensus: question-aware prefill eviction where a KV head keeps the tokens all of its query heads
want, by the geometric rather than the arithmetic mean of their question attention."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class GroupConsensus(EvictionMethod):
    name = "group_consensus"
    query_window = 16
    question_queries = True
    eps = 1e-4                  # keeps a single indifferent head from zeroing a token outright
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        mass = view.attention(reduce="mean")                      # (H_q, T)
        logm = (mass + self.eps).log()
        score = view.group(logm, "mean").exp()                    # geometric mean over the group's query heads
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        score[:, : self.sinks] = float("inf")
        first_q = view.query_positions.min().to(view.positions.device)
        score = score.masked_fill(view.positions >= first_q, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
