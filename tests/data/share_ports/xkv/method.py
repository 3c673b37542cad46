import torch

from harness.api import EvictionMethod, Keep, LayerView


class JointSpectrum(EvictionMethod):
    query_window = 8

    def setup(self, model):
        self.seen = {}

    def select(self, view: LayerView) -> Keep:
        mine = view.keys.float()
        self.seen[view.layer] = mine
        lower = self.seen.get(view.layer - 1)
        if lower is None or lower.shape != mine.shape:
            stacked = mine
        else:
            stacked = torch.cat((lower, mine), dim=-1)
        u, s, v = torch.svd_lowrank(stacked, q=24)
        rebuilt = (u * s[:, None, :]) @ v.transpose(-1, -2)
        mine_hat = rebuilt[..., -mine.shape[-1]:]
        q = view.group(view.queries.float(), "mean")
        att = torch.softmax(q @ mine_hat.transpose(-1, -2) / mine.shape[-1] ** 0.5, dim=-1)
        return Keep.from_topk(att.mean(dim=1), view.budget, view.valid)
