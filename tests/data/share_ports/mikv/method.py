import torch

from harness.api import EvictionMethod, Keep, LayerView


def coarse(x, bits=2):
    lo = x.amin(dim=-2, keepdim=True)
    hi = x.amax(dim=-2, keepdim=True)
    scale = (hi - lo).clamp_min(1e-6) / (2 ** bits - 1)
    return torch.round((x - lo) / scale) * scale + lo


class TwoTier(EvictionMethod):
    query_window = 1 << 16

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        q = view.group(view.queries.float(), "mean")
        heavy = torch.softmax(q @ k.transpose(1, 2), dim=-1).sum(dim=1)
        cut = heavy.kthvalue(max(1, heavy.shape[-1] - view.budget // 2), dim=-1, keepdim=True).values
        tier = torch.where((heavy > cut)[..., None], k, coarse(k))
        final = torch.softmax(q @ tier.transpose(1, 2), dim=-1).sum(dim=1)
        return Keep.from_topk(final, view.budget, view.valid)
