"""Nearest groups: keys clustered, the newest query against the centroids, each token scored by its group's
similarity; a fixed budget of the best."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class NearestGroups(EvictionMethod):
    name = "nearest_groups"
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        h, n, d = k.shape
        cent = k[:, torch.linspace(0, n - 1, 8).long()]
        for _ in range(4):
            near = torch.cdist(k, cent).argmin(dim=-1)
            acc = torch.zeros(h, 8, d).scatter_add(1, near[..., None].expand(-1, -1, d), k)
            cnt = torch.zeros(h, 8).scatter_add(1, near, torch.ones(h, n)).clamp_min(1)
            cent = acc / cnt[..., None]
        q = view.group(view.queries.float(), "mean")[:, -1]
        rel = torch.einsum("hcd,hd->hc", cent, q)
        return Keep.from_topk(rel.gather(1, near), view.budget, view.valid)
