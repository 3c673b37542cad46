import torch
from harness.api import EvictionMethod, Keep, LayerView


class Bands(EvictionMethod):
    query_window = 64
    reach = 256

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")            # (H, N, T)
        H, N, T = a.shape
        qcol = (view.query_positions - view.positions[0, 0]).long()     # key index of each query's own position
        offs = torch.arange(self.reach)
        idx = (qcol[:, None] - offs[None, :]).clamp(min=0)              # (N, R)
        per_off = a.gather(2, idx.expand(H, N, self.reach)).sum(1)       # (H, R): attention at each offset
        back = (qcol[-1] - torch.arange(T)).clamp(0, self.reach - 1)
        return Keep.from_topk(a.sum(1) + per_off[:, back], view.budget, view.valid)
