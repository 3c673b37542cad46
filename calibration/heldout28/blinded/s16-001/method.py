"""Hedged Memory: two accumulated-attention scores with different memories, mixed by how well each one called the
last block.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048; attention accumulated over the generated steps) and A2SF
(Jo et al., 2024, arXiv 2407.20485; the same with a forgetting factor), and on TOVA's observation (Oren et al.,
2024, arXiv 2401.06104) that the newest attention alone is often enough. Which memory length is right changes
along a reasoning trace, so both are kept: a slow score (plain sum, H2O) and a fast one (decayed by 0.5 per
eviction). At each eviction, before updating, each score is asked what share of the attention mass of the queries
since the previous eviction fell on the entries it would have kept; the two weights are then updated
multiplicatively (Hedge, Freund and Schapire 1997, learning rate 4) and the eviction ranks by the weighted mix of
the two scores' percentile ranks. The first 4 and newest 8 entries are always kept.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _pct(x: torch.Tensor) -> torch.Tensor:
    return x.argsort(dim=-1).argsort(dim=-1).float() / max(1, x.shape[-1] - 1)


class HedgedMemory(EvictionMethod):
    name = "hedged_memory"
    query_window = 48
    fast_decay = 0.5
    rate = 4.0
    n_first = 4
    n_newest = 8

    def _would_keep(self, score: torch.Tensor, k: int, valid: torch.Tensor) -> torch.Tensor:
        s = score.masked_fill(~valid, float("-inf"))
        mask = torch.zeros_like(valid)
        return mask.scatter(1, s.topk(min(k, s.shape[1]), dim=1).indices, True) & valid

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        slow, fast = view.recall("slow"), view.recall("fast")
        weights = view.state.get("w", torch.tensor([0.5, 0.5]))
        if view.queries is not None and view.query_positions is not None:
            fresh = view.query_positions > view.state.get("upto", -1)
            if bool(fresh.any()):
                mass = view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum")
                if "upto" in view.state:  # score the two memories on this block before they see it
                    k = view.budget
                    got = torch.stack([(mass * self._would_keep(s, k, valid)).sum() for s in (slow, fast)])
                    got = got / mass.sum().clamp_min(1e-9)
                    weights = weights * torch.exp(self.rate * got.cpu())
                    weights = weights / weights.sum()
                slow = slow + mass
                fast = fast * self.fast_decay + mass
                view.state["upto"] = int(view.query_positions.max())
        view.state["w"] = weights
        view.remember("slow", slow)
        view.remember("fast", fast)
        score = float(weights[0]) * _pct(slow) + float(weights[1]) * _pct(fast)
        order = valid.int().cumsum(dim=1)
        count = valid.sum(dim=1, keepdim=True)
        pinned = valid & ((order <= self.n_first) | (order > count - self.n_newest))
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
