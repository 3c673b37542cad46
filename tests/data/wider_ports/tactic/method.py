"""Swarms: keys gathered into groups around a few centres; the newest query's pull on each group is read from its
centre, and groups are taken, strongest first, until they hold most of the pull."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _groups(keys: torch.Tensor, count: int, rounds: int = 6):
    h, n, d = keys.shape
    centres = keys[:, torch.linspace(0, n - 1, count).long()]
    for _ in range(rounds):
        member = torch.cdist(keys, centres).argmin(dim=-1)
        total = torch.zeros(h, count, d).scatter_add(1, member[..., None].expand(-1, -1, d), keys)
        size = torch.zeros(h, count).scatter_add(1, member, torch.ones(h, n))
        centres = total / size.clamp_min(1)[..., None]
    return member, centres, size


class Swarms(EvictionMethod):
    name = "swarms"
    query_window = 1
    share = 0.9

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        member, centres, size = _groups(k, 16)
        q = view.group(view.queries.float(), "mean")[:, -1]
        mass = torch.einsum("hcd,hd->hc", centres, q).mul(view.model.scale).exp() * size
        mass = mass / mass.sum(dim=-1, keepdim=True)
        ordered, order = mass.sort(dim=-1, descending=True)
        enough = ordered.cumsum(dim=-1) - ordered < self.share
        taken = torch.zeros_like(enough).scatter(1, order, enough)
        score = taken.float().gather(1, member) + mass.gather(1, member)
        return Keep.from_topk(score, view.budget, view.valid)
