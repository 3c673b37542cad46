"""Tally and fold: the attention each token has received, summed over calls, keeps the best per head; a dropped
token's value is folded into its kept neighbours in proportion to their tallies."""

import torch

from harness.api import EvictionMethod, Keep, LayerView, Rewrite


class TallyFold(EvictionMethod):
    name = "tally_fold"
    query_window = 16

    def setup(self, model):
        self.sofar = None

    def select(self, view: LayerView):
        h = view.n_kv_heads
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        got = torch.softmax(q @ view.keys.float().transpose(1, 2) * view.model.scale, dim=-1).sum(dim=1)
        if self.sofar is not None and self.sofar.shape == got.shape:
            got = got + self.sofar
        self.sofar = got
        keep = Keep.from_topk(got, view.budget, view.valid)
        keys, vals = [], []
        for i in range(h):
            kept = keep.indices[i]
            v = view.values[i].float()
            w = got[i, kept] / got[i, kept].sum().clamp_min(1e-6)
            dropped = v.sum(0) - v[kept].sum(0)
            vals.append(v[kept] + w[:, None] * dropped[None, :] / max(1, v.shape[0] - kept.numel()))
            keys.append(view.keys[i, kept])
        return Rewrite(keys=tuple(keys), values=tuple(vals), keep=keep)
