"""Above-the-floor question attention (board A, question-aware prefill).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): the question rows' attention ranks the context, pooled over
neighbours. What changes is how the rows are added up. A question row whose attention is nearly flat (a
function word, a separator) adds a smooth carpet to every token when its probabilities are summed, and that
carpet favours long stretches of ordinary text. Here each row only contributes where it rises above its own
median: the row's log-probability minus the log of its median, clipped at zero, then summed over rows. A row
that singles out a few tokens speaks loudly; a flat row says almost nothing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class AboveTheFloor(EvictionMethod):
    name = "above_the_floor"
    query_window = 8
    question_queries = True
    kernel = 5
    chunk = 64

    def _lift(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        lift = torch.zeros(q.shape[0], view.n_tokens, device=view.keys.device)
        for s in range(0, q.shape[1], self.chunk):
            sub = view.queries[:, s:s + self.chunk]
            qpos = view.query_positions[s:s + self.chunk]
            from harness.api import reference_attention
            att = reference_attention(sub, view.keys, view.positions, qpos, view.model.group_size, view.valid,
                                      scale=view.model.scale)                    # (H_q, c, T)
            seen = att > 0
            logp = torch.log(att.clamp_min(1e-12))
            big = torch.where(seen, logp, torch.full_like(logp, float("inf")))
            floor = torch.where(seen, logp, torch.full_like(logp, float("nan"))).nanmedian(dim=-1, keepdim=True).values
            lift += (big - floor).clamp_min(0).masked_fill(~seen, 0).sum(1)
        return lift

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(self._lift(view), "max")
        score = F.max_pool1d(score[:, None], self.kernel, 1, self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
