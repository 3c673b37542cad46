"""Segment Critics: the context's closing queries, taken in segments, nominate the key blocks that matter."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SegmentCritics(EvictionMethod):
    name = "segment_critics"
    query_window = 64
    segments = 4
    block = 32

    def select(self, view: LayerView) -> Keep:
        H, T, D = view.keys.shape
        if view.budget >= T or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.budget * 8 < T * 1.0:  # tight budgets: keep the freshest tokens
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        q = view.queries.float()
        n = q.shape[1]
        seg = max(1, n // self.segments)
        reps = torch.stack([q[:, i:i + seg].mean(1) for i in range(0, n, seg)], 1)     # (Hq, S, D)
        nb = -(-T // self.block)
        k = torch.nn.functional.pad(view.keys.float(), (0, 0, 0, nb * self.block - T)).repeat_interleave(g, 0)
        dots = torch.einsum("hsd,htd->hst", reps, k).reshape(H * g, reps.shape[1], nb, self.block)
        crit = view.group(dots.amax(-1).amax(1), "max")                             # (H_kv, blocks)
        fine = view.group(view.attention().sum(1), "mean")
        score = crit.repeat_interleave(self.block, 1)[:, :T] + fine
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
