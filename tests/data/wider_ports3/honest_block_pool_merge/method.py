"""Boxes: the older part of the cache is averaged in boxes of consecutive tokens (one entry per box), the newest
stretch kept as it is."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, LayerView, Rewrite


class Boxes(EvictionMethod):
    name = "boxes"
    fresh = 64

    def select(self, view: LayerView) -> Rewrite:
        h, n = view.n_kv_heads, view.n_tokens
        tail = min(self.fresh, view.budget // 2)
        old = n - tail
        box = max(1, -(-old // (view.budget - tail)))
        k_box = F.avg_pool1d(view.keys[:, :old].float().transpose(1, 2), box, box, ceil_mode=True).transpose(1, 2)
        v_box = F.avg_pool1d(view.values[:, :old].float().transpose(1, 2), box, box, ceil_mode=True).transpose(1, 2)
        pos = view.positions[:, :old:box]
        return Rewrite(keys=tuple(torch.cat([k_box[i].to(view.keys.dtype), view.keys[i, old:]]) for i in range(h)),
                       values=tuple(torch.cat([v_box[i].to(view.values.dtype), view.values[i, old:]])
                                    for i in range(h)),
                       positions=tuple(torch.cat([pos[i], view.positions[i, old:]]) for i in range(h)))
