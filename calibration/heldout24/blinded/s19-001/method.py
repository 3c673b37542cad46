"""Idle-layer shortcut (board B_online, query-agnostic prefill).

Some layers barely read the context: their closing rows put almost all their attention on the opening tokens
and on their own neighbourhood. For such a layer, ranking the middle is wasted effort and noise; it keeps the
opening tokens and its newest stretch. Every other layer ranks the context by the closing rows' pooled
attention. A layer is idle when the opening and neighbourhood mass of its closing rows passes a threshold.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class IdleLayerShortcut(EvictionMethod):
    name = "idle_layer_shortcut"
    query_window = 16
    opening = 4
    idle_mass = 0.7
    kernel = 7

    def _streaming(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            b = min(view.budget, idx.numel())
            a = min(self.opening, b)
            out.append(torch.cat([idx[:a], idx[idx.numel() - (b - a):]]) if b > a else idx[:a])
        return Keep(tuple(out))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()                                              # (H_q, W, T)
        newest = view.positions.max(dim=-1, keepdim=True).values
        near = view.positions > newest - max(self.opening, view.budget - self.opening)
        edge = (view.positions < self.opening) | near                       # what streaming would keep
        edge_q = edge.repeat_interleave(view.model.group_size, dim=0)       # (H_q, T)
        mass = (att * edge_q[:, None, :]).sum(-1).mean()
        if float(mass) >= self.idle_mass:
            return self._streaming(view)
        score = view.group(att.sum(1), "mean")
        score = F.max_pool1d(score[:, None], self.kernel, 1, self.kernel // 2)[:, 0]
        window = view.positions >= view.query_positions.min()
        return Keep.from_topk(score.masked_fill(window, float("inf")), view.budget, view.valid)
