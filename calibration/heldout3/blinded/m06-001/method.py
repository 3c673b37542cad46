import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Codebook agreement: a cheap binary code of each key against the code of the latest query."""

    name = "codebook_agreement"
    query_window = 1
    bits = 32
    tail = 16

    def setup(self, model_info) -> None:
        gen = torch.Generator().manual_seed(1234)
        self.planes = torch.randn(model_info.head_dim, self.bits, generator=gen)

    def select(self, view: LayerView) -> Keep:
        planes = self.planes.to(view.keys.device)
        kc = (view.keys.float() @ planes) > 0                       # (Hkv, T, bits)
        qc = (view.queries[:, -1].float() @ planes) > 0            # (Hq, bits)
        g = view.model.group_size
        qc = qc.view(kc.shape[0], g, self.bits)
        agree = torch.zeros(kc.shape[0], kc.shape[1], device=planes.device)
        for j in range(g):
            agree += (kc == qc[:, j, None, :]).sum(dim=-1).float()
        agree[:, -self.tail:] = float("inf")
        return Keep.from_topk(agree, view.budget, view.valid)
