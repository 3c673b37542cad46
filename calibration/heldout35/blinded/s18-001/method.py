"""Idle Layers: layers that only look at the start and the end of the context get only the start and the end.

Some layers do little more than read their first tokens and their latest ones. For such an idle layer the
method keeps exactly that (opening tokens plus the most recent stretch); every other layer keeps the tokens its
latest positions read most, plus the same recent stretch.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class IdleLayers(EvictionMethod):
    name = "idle_layers"
    query_window = 8
    opening = 4
    idle_mass = 0.65
    recent_share = 0.25

    def select(self, view: LayerView) -> Keep:
        b, t = view.budget, view.n_tokens
        if b >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        recent = max(1, int(b * self.recent_share))
        read = view.group(view.attention(reduce="mean"), "mean")          # (H_kv, T)
        edge = torch.zeros(t, dtype=torch.bool, device=read.device)
        edge[: self.opening] = True
        edge[max(0, t - recent):] = True
        idle = float((read * edge).sum(-1).mean()) > self.idle_mass
        if idle:
            scores = torch.zeros_like(read)
            scores[:, : self.opening] = 2.0
            scores = scores + view.positions.float() / float(view.positions.max().clamp_min(1))
        else:
            scores = read.clone()
            scores[:, max(0, t - recent):] = float("inf")
        return Keep.from_topk(scores, b, view.valid)
