import torch

from harness.api import EvictionMethod, Keep, LayerView


class SpectralCodebook(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        rows = []
        for h in range(view.n_kv_heads):
            kh = view.keys[h].float()
            _, _, basis = torch.pca_lowrank(kh, q=min(32, kh.shape[-1]), center=True)
            mu = kh.mean(dim=0)
            z = (kh - mu) @ basis
            step = z.std(dim=0, keepdim=True).clamp_min(1e-6) / 2
            zq = torch.floor(z / step + 0.5) * step
            approx = zq @ basis.T + mu
            qh = view.group(view.queries.float(), "mean")[h]
            rows.append(torch.softmax(qh @ approx.T, dim=-1).amax(dim=0))
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
