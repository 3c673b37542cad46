"""Question Lift: keep the context tokens the question looks at more than the context's own closing
queries do.

Board A hands over the question's queries and the last prompt positions before them. Generic salience
(sinks, separators, recent formatting) is attended by every query; what the question needs is what it
attends to *more* than ordinary context queries do. Each token's question attention is multiplied by the
square root of its lift over a baseline: the attention of the earlier half of the handed-over queries (the
context just before the question), the later half being the question side.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class QuestionLift(EvictionMethod):
    name = "question_lift"
    query_window = 64
    question_queries = True
    sinks = 2
    eps = 1e-4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qpos = view.query_positions
        attn = view.attention()  # (H_q, N, T)
        order = qpos.argsort()
        n = attn.shape[1]
        split = max(1, n // 2)  # earlier half: context before the question; later half: the question side
        base = attn[:, order[:split]].mean(dim=1)
        ask = attn[:, order[split:]].mean(dim=1) if split < n else base
        lift = (ask + self.eps) / (base + self.eps)
        score = view.group(ask * lift.clamp(max=8.0).sqrt(), "mean")
        score = F.avg_pool1d(score[:, None], 3, stride=1, padding=1, count_include_pad=False)[:, 0]
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        score = score.masked_fill(view.positions >= qpos.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
