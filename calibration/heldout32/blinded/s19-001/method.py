"""Skeleton Stride (board B_online): a tenth of the budget goes to an evenly spaced skeleton of the whole
context (every k-th token, so every region keeps a foothold for later questions), the rest to the tokens the
context's closing rows read most, with the closing rows themselves and the sinks kept."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SkeletonStride(EvictionMethod):
    name = "skeleton_stride"
    query_window = 32
    skeleton_share = 0.1
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        t = view.n_tokens
        read = view.group(view.attention(reduce="sum"), "mean")
        read = F.max_pool1d(read[:, None], 5, stride=1, padding=2)[:, 0]
        n_bones = int(view.budget * self.skeleton_share)
        score = read / read.amax(-1, keepdim=True).clamp_min(1e-9)
        if n_bones > 0:
            bones = torch.linspace(0, t - 1, n_bones + 2, device=score.device).round().long()[1:-1]
            score[:, bones] = 5.0
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
