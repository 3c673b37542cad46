"""Long and short memory: a token's worth is its share of the attention tallied over every call plus its share of
the closing queries' attention; one ranking over all heads sets how many each head keeps, and what a head drops is
folded into what it keeps."""

import torch

from harness.api import EvictionMethod, Keep, LayerView, Rewrite


class LongShort(EvictionMethod):
    name = "long_short"
    query_window = 16

    def setup(self, model):
        self.tally = None

    def select(self, view: LayerView):
        h, n = view.n_kv_heads, view.n_tokens
        q = view.queries.float().reshape(h, -1, view.keys.shape[-1])
        att = torch.softmax(q @ view.keys.float().transpose(1, 2) * view.model.scale, dim=-1)
        short = att.sum(dim=1)
        long = short
        if self.tally is not None and self.tally.shape == short.shape:
            long = short + self.tally
        self.tally = long
        worth = long / long.sum(-1, keepdim=True) + short / short.sum(-1, keepdim=True)
        chosen = worth.flatten().topk(view.budget * h).indices
        mask = torch.zeros(h * n, dtype=torch.bool)
        mask[chosen] = True
        mask = mask.view(h, n)
        keys, vals, idx = [], [], []
        for i in range(h):
            kept = mask[i].nonzero().flatten()
            gone = (~mask[i]).nonzero().flatten()
            v = view.values[i].float().clone()
            if gone.numel() and kept.numel():
                w = worth[i, gone]
                v[kept] = v[kept] + (w[:, None] * v[gone]).sum(0) / w.sum().clamp_min(1e-6) / kept.numel()
            keys.append(view.keys[i, kept])
            vals.append(v[kept])
            idx.append(kept)
        return Rewrite(keys=tuple(keys), values=tuple(vals), keep=Keep(indices=tuple(idx)))
