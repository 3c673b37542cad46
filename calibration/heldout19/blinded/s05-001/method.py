"""Two-clock retention (board C).

Each eviction looks at the queries since the previous one and measures the mean attention each token received from
them (a fast clock: only this block). A slow clock keeps an exponential average of those block means (0.9 old,
0.1 new). A token survives if either clock ranks it high: score = max of the two, each normalised by its own mean
over the layer's tokens. Opening tokens and the newest 32 are held.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TwoClock(EvictionMethod):
    name = "two_clock"
    query_window = 512
    slow_keep = 0.9
    openers = 4
    tail = 32

    @staticmethod
    def _unit(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        m = (x * valid).sum(dim=1, keepdim=True) / valid.sum(dim=1, keepdim=True).clamp_min(1)
        return x / m.clamp_min(1e-12)

    def select(self, view: LayerView) -> Keep:
        slow = view.recall("slow")
        fast = torch.zeros_like(slow)
        if view.queries is not None:
            done = view.state.get("tc_q", -1)
            fresh = view.query_positions > done
            if bool(fresh.any()):
                fast = view.group(view.attention()[:, fresh].mean(dim=1), "mean")
                slow = self.slow_keep * slow + (1 - self.slow_keep) * fast
                view.state["tc_q"] = int(view.query_positions.max())
        view.remember("slow", slow)
        valid = view.valid_mask().float()
        score = torch.maximum(self._unit(fast, valid), self._unit(slow, valid))
        newest = view.positions.amax(dim=-1, keepdim=True)
        held = (view.positions < self.openers) | (view.positions > newest - self.tail)
        return Keep.from_topk(score.masked_fill(held, float("inf")), view.budget, view.valid)
