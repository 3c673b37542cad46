import torch
from harness.api import EvictionMethod, Keep, LayerView


class Bits(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        d = view.keys.shape[-1]
        S = torch.randn(256, d, generator=torch.Generator().manual_seed(0))
        kb = torch.where(torch.einsum("md,htd->htm", S, view.keys.float()) >= 0, 1.0, -1.0)
        kn = view.keys.float().pow(2).sum(-1).sqrt()
        qs = torch.einsum("md,hnd->hnm", S, view.group(view.queries.float(), "mean"))
        est = torch.einsum("hnm,htm->hnt", qs, kb) * kn[:, None, :]
        return Keep.from_topk(est.softmax(-1).sum(1), view.budget, view.valid)
