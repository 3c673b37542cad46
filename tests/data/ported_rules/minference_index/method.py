import torch
from harness.api import EvictionMethod, Keep, LayerView


class Bands2(EvictionMethod):
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")            # (H, N, T)
        H, N, T = a.shape
        rows = torch.arange(N)
        cols = torch.arange(T - N, T)
        per = torch.zeros(H, T)
        for d in range(T - N):
            per[:, d] = a[:, rows, cols - d].sum(-1)
        back = torch.arange(T - 1, -1, -1)
        return Keep.from_topk(a.sum(1) + per[:, back], view.budget, view.valid)
