"""Runs of look-alikes: consecutive keys whose cosine similarity stays high form a run; each run is averaged into
its most attended member, then the closing queries' attention keeps the best entries."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView, Rewrite


class Runs(EvictionMethod):
    name = "runs"
    query_window = 16
    bar = 0.9

    def select(self, view: LayerView):
        h = view.n_kv_heads
        k, v = view.keys.float(), view.values.float()
        q = view.queries.float().reshape(h, -1, k.shape[-1])
        att = torch.softmax(q @ k.transpose(1, 2) * view.model.scale, dim=-1).sum(dim=1)
        step = F.cosine_similarity(k[:, 1:], k[:, :-1], dim=-1) > self.bar
        keep = Keep.from_topk(att, view.budget, view.valid)
        keys, vals = [], []
        for i in range(h):
            kk, vv = k[i].clone(), v[i].clone()
            for t in range(1, k.shape[1]):
                if step[i, t - 1]:
                    kk[t] = (kk[t] + kk[t - 1]) / 2
                    vv[t] = (vv[t] + vv[t - 1]) / 2
            keys.append(kk[keep.indices[i]])
            vals.append(vv[keep.indices[i]])
        return Rewrite(keys=tuple(keys), values=tuple(vals), keep=keep)
