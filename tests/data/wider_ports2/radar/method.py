"""Beacon segments: keys and the query lifted by one fixed random feature map; each segment summed in that space,
the query's lift against each segment's sum picks the segments kept, beside the first tokens and the newest."""
import torch
from harness.api import EvictionMethod, Keep, LayerView

class Beacon(EvictionMethod):
    name = "beacon"
    seg = 32
    feats = 64
    tail = 64

    def setup(self, model):
        g = torch.Generator().manual_seed(0)
        self.proj = torch.randn(model.head_dim, self.feats, generator=g)

    def _lift(self, x):
        z = x @ self.proj
        return torch.exp(z - (x * x).sum(-1, keepdim=True) / 2)

    def on_decode(self, view: LayerView) -> Keep:
        h, n = view.n_kv_heads, view.n_tokens
        k = view.keys.float() * view.model.scale ** 0.5
        q = view.queries.float().reshape(h, -1, k.shape[-1])[:, -1] * view.model.scale ** 0.5
        fk = self._lift(k)
        pad = (-n) % self.seg
        fk = torch.nn.functional.pad(fk, (0, 0, 0, pad))
        summ = fk.reshape(h, -1, self.seg, self.feats).sum(2)
        hit = torch.einsum("hf,hsf->hs", self._lift(q), summ)
        s = hit.repeat_interleave(self.seg, dim=1)[:, :n]
        s[:, :4] = float("inf")
        s[:, -self.tail:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        return self.on_decode(view)
