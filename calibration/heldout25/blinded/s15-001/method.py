"""Even-temperature ranking (board A, question-aware prefill).

A row that can see many keys spreads its softmax thinner than a row that sees few, so summing rows of different
reach mixes sharp and blurred votes. Even-temperature ranking sharpens every row to the same expected spread
before it votes: its logits are multiplied by log(reach) / log(reference reach). The votes are then weighted by
how much each entry's value can move the output.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class _Tempered:
    """Tempered attention of a block of rows over one KV head's keys."""

    def __init__(self, keys: torch.Tensor, kpos: torch.Tensor, scale: float, ref: float) -> None:
        self.keys, self.kpos, self.scale, self.log_ref = keys.float(), kpos, scale, math.log(max(ref, 2.0))

    def __call__(self, q: torch.Tensor, qpos: torch.Tensor) -> torch.Tensor:
        logits = torch.matmul(q.float(), self.keys.T) * self.scale           # (G, N, T)
        visible = self.kpos[None, :] <= qpos[:, None]                        # (N, T)
        reach = visible.sum(-1).clamp(min=2).float()
        factor = reach.log() / self.log_ref                                  # (N,)
        logits = logits * factor[None, :, None]
        logits = logits.masked_fill(~visible[None], float("-inf"))
        return F.softmax(logits, dim=-1).nan_to_num(0.0)


class EvenTemperature(EvictionMethod):
    name = "even_temperature"
    query_window = 16
    question_queries = True
    pool = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        qpos = view.query_positions
        ref = float(valid.sum(-1).float().mean())
        score = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for h in range(view.n_kv_heads):
            tempered = _Tempered(view.keys[h], view.positions[h].masked_fill(~valid[h], 1 << 40),
                                 view.model.scale, ref)
            probs = tempered(view.queries[h * g:(h + 1) * g], qpos)          # (G, N, T)
            score[h] = probs.sum(dim=1).mean(0)
        score = score * view.values.float().norm(dim=-1)
        score = F.max_pool1d(score[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0]
        score = score.masked_fill(view.positions >= int(qpos.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
