"""Sketch: while decoding, keys are grouped around a few centres that follow the stream; each token is drawn into
the cache with a chance that grows with its value's length, so the cache is a random sample weighted by size."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class Sketch(EvictionMethod):
    name = "sketch"
    centres = 12

    def _score(self, view: LayerView) -> torch.Tensor:
        k = view.keys.float()
        h, n, d = k.shape
        anchors = k[:, :: max(1, n // self.centres)][:, : self.centres].clone()
        for _ in range(4):
            near = torch.cdist(k, anchors).argmin(dim=-1)
            for head in range(h):
                total = torch.zeros_like(anchors[head]).index_add_(0, near[head], k[head])
                count = torch.bincount(near[head], minlength=anchors.shape[1]).clamp_min(1)
                anchors[head] = total / count[:, None]
        weight = view.values.float().norm(dim=-1)
        chance = weight / weight.sum(dim=-1, keepdim=True)
        drawn = torch.multinomial(chance, min(view.budget, n), replacement=False)
        score = torch.zeros(h, n).scatter(1, drawn, 1.0)
        first = torch.zeros(h, anchors.shape[1], dtype=torch.long).scatter_reduce(
            1, near, torch.arange(n).expand(h, n), reduce="amin", include_self=False)
        return score.scatter(1, first, 2.0)

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(self._score(view), view.budget, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        return Keep.from_topk(self._score(view), view.budget, view.valid)
