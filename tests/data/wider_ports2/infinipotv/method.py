"""Frame thinning: a cached token whose key points where the newest stretch's keys point is a repeat and goes
first; among the rest the longer values stay."""
import torch
import torch.nn.functional as F
from harness.api import EvictionMethod, Keep, LayerView

class FrameThin(EvictionMethod):
    name = "frame_thin"
    stretch = 32
    mix = 0.5

    def _repeat(self, keys):
        unit = F.normalize(keys.float(), dim=-1)
        newest = unit[:, -self.stretch:, :]
        return torch.einsum("hnd,hmd->hnm", unit, newest).amax(dim=-1)

    def select(self, view: LayerView) -> Keep:
        rep = self._repeat(view.keys)
        mag = view.values.float().norm(dim=-1)
        mag = mag / mag.amax(dim=-1, keepdim=True)
        score = self.mix * mag - (1 - self.mix) * rep
        score[:, -self.stretch:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
