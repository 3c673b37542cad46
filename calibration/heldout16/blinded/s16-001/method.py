"""Neighbour hand-off (board B_offline; rewrites entries with ``Rewrite``).

When a pair is evicted, what it carried is lost to every later question. We hand it off instead. The one-off
re-reading pass ranks the pairs: a pair's weight is the attention it receives from all re-reading queries, summed
over them and over the query heads of its KV head (the harder the model leans on it to reproduce the context, the
harder it is to regenerate without it). The heaviest pairs are kept, the 4 opening tokens always among them. Every
evicted pair is then linked to its 3 most similar kept pairs (cosine of the keys), with link weights given by a
softmax of those similarities at temperature 0.1, and hands a fraction (0.15) of its key and value to them along the
links. Kept keys are rescaled to their original norms afterwards so that the hand-off moves their direction, not
their size.

Contrast: token merging (ToMe) averages matched pairs into one entry and drops nothing on purpose; here the ranked
pairs stay exact and the evicted ones only leak into them.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class NeighbourHandoff(EvictionMethod):
    name = "neighbour_handoff"
    reconstruction_queries = True
    opening = 4
    links = 3
    temperature = 0.1
    share = 0.15

    def _weights(self, view: LayerView) -> torch.Tensor:
        if view.queries is None:
            return view.positions.float()
        return view.group(view.attention(view.queries, reduce="sum"), "sum")

    def select(self, view: LayerView) -> Rewrite:
        w = self._weights(view).masked_fill(view.positions < self.opening, float("inf"))
        valid = view.valid_mask()
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            k, v, p = view.keys[h, idx].float(), view.values[h, idx].float(), view.positions[h, idx]
            b = min(view.budget, idx.numel())
            order = w[h, idx].argsort(descending=True)
            kept, gone = order[:b].sort().values, order[b:]
            kk, vv = k[kept].clone(), v[kept].clone()
            if gone.numel() and b > 0:
                sim = F.normalize(k[gone], dim=-1) @ F.normalize(kk, dim=-1).T  # (evicted, kept)
                top = sim.topk(min(self.links, b), dim=-1)
                link = (top.values / self.temperature).softmax(dim=-1) * self.share
                flow = torch.zeros(gone.numel(), b, device=k.device).scatter_(1, top.indices, link)
                norms = kk.norm(dim=-1, keepdim=True)
                kk = kk + flow.T @ k[gone]
                vv = vv + flow.T @ v[gone]
                kk = F.normalize(kk, dim=-1) * norms
            ks.append(kk.to(view.keys.dtype))
            vs.append(vv.to(view.values.dtype))
            ps.append(p[kept])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
