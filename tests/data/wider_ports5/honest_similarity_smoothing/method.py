"""Neighbourhood credit: SnapKV's pooled closing-window attention, plus a share of the attention paid to each
token's look-alikes (one step over the key-likeness graph), so a token whose twins were read is not dropped."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class NeighbourhoodCredit(EvictionMethod):
    name = "neighbourhood_credit"
    query_window = 32
    share = 0.3

    def select(self, view: LayerView) -> Keep:
        got = view.group(view.attention(reduce="sum"), "mean")
        got = F.max_pool1d(got[:, None], 5, 1, 2)[:, 0]
        u = F.normalize(view.keys.float(), dim=-1)
        w = (u @ u.transpose(1, 2)).clamp_min(0)
        w = w / w.sum(-1, keepdim=True).clamp_min(1e-9)
        score = got + self.share * torch.einsum("hij,hj->hi", w, got)
        score[:, -self.query_window:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
