"""WhereWhat: query-aware prefill eviction mixing *what* the question attends to with *where* tokens sit.

"What": attention of the question-span queries over the context, averaged over the query heads of each
KV head and smoothed with a 1-D average pool so that neighbours of a hit survive together. "Where": a
recency prior (exponential in the distance to the end of the context). The two are mixed after scaling
the attention to [0, 1] per head; sinks and the question itself are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class WhereWhat(EvictionMethod):
    name = "wherewhat_a"
    question_queries = True  # the question span's queries
    query_window = 16  # plus the last 16 prompt queries
    kernel = 7
    n_sink = 4
    where_weight = 0.3
    recency_tau = 0.05  # fraction of the context over which the recency prior decays by e

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        attn = view.attention()  # (H_q, N, T)
        what = view.group(attn.mean(dim=1), "mean")  # (H_kv, T)
        what = F.avg_pool1d(what[:, None, :], self.kernel, stride=1, padding=self.kernel // 2)[:, 0, :]
        what = what / what.amax(dim=-1, keepdim=True).clamp_min(1e-12)
        pos = view.positions.float()
        span = (pos.amax(dim=-1, keepdim=True) - pos.amin(dim=-1, keepdim=True)).clamp_min(1.0)
        where = torch.exp(-(pos.amax(dim=-1, keepdim=True) - pos) / (self.recency_tau * span))
        score = (1 - self.where_weight) * what + self.where_weight * where
        score[:, : self.n_sink] = float("inf")
        if view.query_positions is not None:
            score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, valid)
