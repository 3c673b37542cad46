"""Recycled ranking: the newest query's attention ranks the cache at a full step; the ranking is reused at the steps
after it until the newest query drifts from the one of that step, then the cache is ranked afresh."""
import torch

from harness.api import EvictionMethod, Keep, LayerView


class Recycle(EvictionMethod):
    name = "recycle"
    query_window = 1
    drift = 0.8

    def select(self, view: LayerView) -> Keep:
        q = view.queries[:, -1].float()
        anchor = view.state.get("anchor")
        stale = anchor is None or float((q * anchor).sum(-1).div(q.norm(dim=-1) * anchor.norm(dim=-1)).mean()) < self.drift
        if stale:
            rank = view.group(view.attention(reduce="sum"), "sum")
            view.state["anchor"] = q
        else:
            rank = view.recall("rank", fill=torch.finfo(torch.float32).max)
        view.remember("rank", rank)
        return Keep.from_topk(rank, view.budget, view.valid)
