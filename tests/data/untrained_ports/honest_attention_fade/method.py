"""Window share, compounded: each token's share of the observation window's attention is raised to a power that grows
with the token's age, so an old token must hold a large share to stay."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class CompoundedShare(EvictionMethod):
    name = "compounded_share"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        share = view.group(view.attention(reduce="mean"))
        share = share / share.sum(dim=-1, keepdim=True)
        age = (view.positions[:, -1:] - view.positions).float() / 512.0
        return Keep.from_topk(share ** (1.0 + age), view.budget, view.valid)
