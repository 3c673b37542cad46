"""Flow over likeness: tokens form a graph whose edges are how alike their keys are; every token starts with the same
standing, which is passed along the edges a few times, and the tokens that end up holding the most are kept."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class FlowOverLikeness(EvictionMethod):
    name = "flow_over_likeness"
    steps = 8
    damping = 0.85

    def select(self, view: LayerView) -> Keep:
        u = F.normalize(view.keys.float(), dim=-1)
        w = (u @ u.transpose(1, 2)).clamp_min(0)
        w = w / w.sum(dim=-1, keepdim=True).clamp_min(1e-9)
        n = view.n_tokens
        r = torch.full(view.keys.shape[:2], 1.0 / n)
        for _ in range(self.steps):
            r = self.damping * torch.einsum("hi,hij->hj", r, w) + (1 - self.damping) / n
        return Keep.from_topk(r, view.budget, view.valid)
