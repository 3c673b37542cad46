import torch

from harness.api import EvictionMethod, Keep, LayerView


class Groups(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        c = k[:, torch.linspace(0, k.shape[1] - 1, 16).long()]
        for _ in range(5):
            a = torch.cdist(k, c).argmin(dim=-1)
            oh = torch.nn.functional.one_hot(a, 16).float()
            c = oh.transpose(1, 2) @ k / oh.sum(dim=1)[..., None].clamp_min(1.0)
        q = view.group(view.queries.float(), "mean")
        hit = torch.softmax(q @ c.transpose(1, 2), dim=-1).sum(dim=1)
        score = torch.gather(hit, 1, a)
        return Keep.from_topk(score, view.budget, view.valid)
