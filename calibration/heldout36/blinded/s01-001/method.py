"""Peak Hold: remember the loudest a token has ever been, and let that memory fade slowly.

Sums of attention reward tokens that are always mildly read; a token read intensely once (a number the
reasoning will need again) is drowned. Each call takes, per token, the largest attention any of the newest
queries gives it (max over the group's query heads); the held value is max(new peak, fade x held peak),
carried across caps by position. Sinks and the newest tokens are kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class PeakHold(EvictionMethod):
    name = "peak_hold"
    query_window = 40
    fade = 0.85
    sinks = 4
    recent = 20

    def select(self, view: LayerView) -> Keep:
        held = view.recall("held")
        if view.queries is not None:
            now = view.group(view.attention(reduce="max"), "max").float()
            held = torch.maximum(now, self.fade * held)
        view.remember("held", held)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        newest = view.positions.masked_fill(~valid, -1).max(dim=1, keepdim=True).values
        hold = (view.positions < self.sinks) | (view.positions > newest - self.recent)
        return Keep.from_topk(held.masked_fill(hold & valid, float("inf")), view.budget, view.valid)
