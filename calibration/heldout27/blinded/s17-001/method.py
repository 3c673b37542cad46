"""Jittered tally (board B_offline): a running tally of attention over the re-reading pass, taken through a
jittered, slowly cooling softmax, beside a recent stretch that is always kept.

The harness's one-off pass has the model read the context back after a "repeat" instruction. Row by row, each
query head's logits over the context get a seeded jitter (-log(-log u), u uniform) and are divided by a
temperature that rises from ``t_start`` to ``t_end`` across the pass; the softened distribution is added to the
tally of each token (summed over the query heads of its KV head). The jitter keeps a few early winners from
owning the tally because every later row also favours them. Each KV head keeps the newest ``recent_share`` of
its budget and the best-tallied tokens for the rest. Without a re-reading pass it keeps the newest tokens.
"""

from __future__ import annotations

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class JitteredTally(EvictionMethod):
    name = "jittered_tally"
    reconstruction_queries = True
    recent_share = 0.3
    t_start = 1.0
    t_end = 2.0
    chunk = 64

    def tally(self, view: LayerView) -> torch.Tensor:
        assert view.queries is not None
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        q = view.queries.float().reshape(h_kv, g, -1, d)
        n = q.shape[2]
        gen = torch.Generator().manual_seed(1_000_003 * view.layer + 31 * t + n)
        keys = view.keys.float().transpose(1, 2)  # (H_kv, D, T)
        total = torch.zeros(h_kv, t, device=keys.device)
        for start in range(0, n, self.chunk):
            block = q[:, :, start: start + self.chunk]
            c = block.shape[2]
            logits = torch.matmul(block, keys[:, None]) * view.model.scale  # (H_kv, G, c, T)
            u = torch.rand(logits.shape, generator=gen).clamp_(1e-9, 1 - 1e-9).to(logits.device)
            step = torch.arange(start, start + c, device=logits.device, dtype=torch.float32)
            temp = self.t_start + (self.t_end - self.t_start) * step / max(1, n - 1)
            soft = ((logits - torch.log(-torch.log(u))) / temp[None, None, :, None]).softmax(dim=-1)
            total += soft.sum(dim=(1, 2))
        return total

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.tally(view)
        recent = int(math.floor(view.budget * self.recent_share))
        if recent:
            score[:, t - recent:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
