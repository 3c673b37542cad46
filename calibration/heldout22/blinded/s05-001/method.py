"""Residual footprint (board B_offline, one-off reconstruction pass).

What a cached pair contributes to the layer's output is the attention it receives times the size of the value it
hands over. The one-off reconstruction pass (the model re-reading its context) supplies the attention side: each
pair's mean share of the re-reading rows, taken at the most interested query head of its group. Multiplying by the
pair's value magnitude (L1) gives its footprint on the residual stream. Footprints are normalised per head and the
layer's whole budget is spent on the largest footprints across all of its heads at once, so a head whose mass is
concentrated gives up room to a head whose mass is spread. The opening tokens are pinned in every head.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ResidualFootprint(EvictionMethod):
    name = "residual_footprint"
    reconstruction_queries = True
    pinned = 4
    floor_share = 0.1

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        ok = view.valid_mask()
        share = view.group(view.attention(view.queries, reduce="mean"), "max")      # (H_kv, T)
        foot = share * view.values.float().abs().sum(-1)
        foot = foot / foot.masked_fill(~ok, 0).sum(-1, keepdim=True).clamp_min(1e-12)
        foot = foot.masked_fill(~ok, float("-inf"))
        foot[:, : self.pinned] = float("inf")
        h, t = foot.shape
        total = min(view.budget * h, int(ok.sum()))
        floor = min(max(self.pinned, int(self.floor_share * view.budget)), total // h)
        first = foot.topk(floor, dim=-1).indices
        rest = foot.scatter(1, first, float("-inf")).flatten()
        extra = rest.topk(total - floor * h).indices
        hit = torch.zeros(h * t, dtype=torch.bool, device=foot.device)
        hit[extra] = True
        hit = hit.view(h, t)
        hit.scatter_(1, first, True)
        return Keep(tuple(hit[i].nonzero().flatten() for i in range(h)))
