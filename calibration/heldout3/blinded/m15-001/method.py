import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Secondary sinks: tokens whose keys point where the first token's key points."""

    name = "secondary_sinks"
    sinks = 4
    recent = 32

    def select(self, view: LayerView) -> Keep:
        k = F.normalize(view.keys.float(), dim=-1)
        anchor = k[:, :1]                                          # (Hkv, 1, D)
        score = (k * anchor).sum(dim=-1)
        score[:, : self.sinks] = float("inf")
        score[:, -self.recent:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
