"""Distance-residual attention (board A).

The question's attention over the context is dominated by a smooth positional trend (recent tokens and the
first tokens get more, whatever they say). This method fits that trend per KV head, a straight line of
log-attention against log-distance from the question, and ranks tokens by how far their attention rises above
the trend (plus a quarter of their raw log-attention, so genuinely strong tokens are not lost). The question
span and the first 4 tokens are always kept."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DistanceResidual(EvictionMethod):
    name = "distance_residual"
    question_queries = True
    query_window = 8
    raw_weight = 0.25
    sinks = 4
    eps = 1e-8

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        q0 = int(view.query_positions.min())
        log_a = torch.log(attn + self.eps)
        dist = (q0 - view.positions).clamp_min(1).float()
        log_d = torch.log(dist)
        ctx = valid & (view.positions < q0) & (view.positions >= self.sinks)
        score = torch.empty_like(log_a)
        for h in range(view.n_kv_heads):
            m = ctx[h]
            if int(m.sum()) < 8:
                score[h] = log_a[h]
                continue
            x, y = log_d[h, m], log_a[h, m]
            xm, ym = x.mean(), y.mean()
            slope = ((x - xm) * (y - ym)).sum() / ((x - xm) ** 2).sum().clamp_min(1e-6)
            trend = ym + slope * (log_d[h] - xm)
            score[h] = (log_a[h] - trend) + self.raw_weight * log_a[h]
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        score = score.masked_fill((view.positions >= q0) | (view.positions < self.sinks), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
