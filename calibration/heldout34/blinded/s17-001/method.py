"""Group Consensus: in a grouped-query layer, a context token ranks higher when the query heads that share a
KV head agree on it.

Builds on SnapKV (question attention summed over the question's queries, pooled, top-k; arXiv 2404.14469) and
on the GQA-aware aggregation used by Ada-KV's GQA support (arXiv 2407.11550), which averages the group's scores.
New here: besides the group's mean attention, each token gets a bonus for the fraction of the group's query
heads that would each keep it on their own (own top-budget), so a token one head loves and the others ignore
yields to one the whole group wants.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class GroupConsensus(EvictionMethod):
    name = "group_consensus"
    question_queries = True
    sinks = 4
    bonus = 1.0

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        start = view.query_positions.min()
        per_head = view.attention(reduce="sum")                              # (H_q, T)
        per_head = F.avg_pool1d(per_head[:, None], 3, stride=1, padding=1)[:, 0]
        g = view.model.group_size
        k = max(1, min(view.budget, n))
        cut = per_head.topk(k, dim=-1).values[:, -1:]                        # each head's own threshold
        agree = (per_head >= cut).float().reshape(view.n_kv_heads, g, -1).mean(dim=1)
        mean = view.group(per_head, "mean")
        mean = mean / mean.amax(dim=-1, keepdim=True).clamp_min(1e-9)
        score = mean + self.bonus * agree
        score = score.masked_fill(view.positions >= start, float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
