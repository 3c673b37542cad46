import torch

from harness.api import EvictionMethod, Keep, LayerView


class LongReach(EvictionMethod):
    """Accumulated attention in which each query's attention to a token counts by the log of their distance:
    a token read from far away is a retrieval target; one read only by its neighbours is local syntax."""

    query_window = 64
    recent = 64

    def select(self, view: LayerView) -> Keep:
        total = view.recall("reach")
        if view.queries is not None and view.query_positions is not None:
            att = view.group(view.attention(), "sum")                                   # (H, N, T)
            gap = (view.query_positions[None, :, None] - view.positions[:, None, :]).clamp(min=0).float()
            total = total + (att * torch.log1p(gap)).sum(dim=1)
        view.remember("reach", total)
        score = total.clone()
        score[:, max(0, view.n_tokens - self.recent):] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
