import torch

from harness.api import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        rows = []
        for h in range(view.n_kv_heads):
            kh = view.keys[h].float()
            unit = kh / kh.norm(dim=-1, keepdim=True).clamp_min(1e-6)
            anchor = kh.mean(dim=0)
            anchor = anchor / anchor.norm().clamp_min(1e-6)
            rows.append(-(unit @ anchor))
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
