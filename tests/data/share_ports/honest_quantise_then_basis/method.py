import torch

from harness.api import EvictionMethod, Keep, LayerView


class CoarseSpread(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        lo, hi = k.amin(dim=1, keepdim=True), k.amax(dim=1, keepdim=True)
        step = (hi - lo).clamp_min(1e-6) / 3
        low = torch.round((k - lo) / step) * step + lo
        q = view.group(view.queries.float(), "mean")
        att = torch.softmax(q @ low.transpose(1, 2), dim=-1).sum(dim=1)
        return Keep.from_topk(att, view.budget, view.valid)
