"""Spread Share: KVzip's reconstruction scores, with each KV head's share of the layer set by how widely the
reconstruction pass reads through it.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): a context entry scores the largest attention any re-read
row pays it (max over the rows and over the KV head's query heads), and the first 4 tokens are kept. KVzip
thresholds one score over all heads; Ada-KV (Feng et al., 2024, arXiv 2407.11550) shares a layer's budget by a
top-k over all (head, token) pairs. Both let the scores' scale decide. Here the share is set by the shape of
each head's reading instead: the total attention the re-read rows pay each entry, normalised, has an entropy H,
and exp(H) is the number of entries the head effectively reads. Each KV head gets a share proportional to
sqrt(exp(H)), clipped to between half and twice the even share, the layer's total unchanged; inside a head the
entries are taken by their KVzip score.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SpreadShare(EvictionMethod):
    name = "spread_share"
    reconstruction_queries = True
    n_sink = 4
    low, high = 0.5, 2.0

    def _shares(self, width: torch.Tensor, lengths: torch.Tensor, budget: int) -> torch.Tensor:
        h = width.numel()
        total = int(min(budget * h, int(lengths.sum())))
        want = (width / width.sum() * budget * h).clamp(self.low * budget, self.high * budget)
        want = want / want.sum() * total
        size = torch.minimum(want.floor().long(), lengths)
        order = (want - want.floor()).argsort(descending=True).tolist()
        while int(size.sum()) < total:
            moved = False
            for i in order:
                if int(size.sum()) >= total:
                    break
                if size[i] < lengths[i]:
                    size[i] += 1
                    moved = True
            if not moved:
                break
        return size

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        peak = view.group(view.attention(reduce="max"), "max")            # (H_kv, T)
        mass = view.group(view.attention(reduce="sum"), "sum").masked_fill(~valid, 0.0)
        p = mass / mass.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        width = torch.special.entr(p).sum(dim=-1).exp().sqrt()            # sqrt of the effective support
        sizes = self._shares(width, valid.sum(dim=1), view.budget)
        peak = peak.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(peak, sizes, view.valid)
