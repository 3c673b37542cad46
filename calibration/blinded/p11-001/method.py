import torch

from harness.api import EvictionMethod, Keep, LayerView


class HeavyTracker(EvictionMethod):
    name = "heavy_tracker"
    query_window = 1 << 30
    tail_share = 0.5

    def _bump(self, view: LayerView) -> torch.Tensor:
        prev = view.recall("mass")
        if view.queries is None:
            return prev
        last = view.state.get("upto", -1)
        new = view.query_positions > last
        if not bool(new.any()):
            return prev
        a = view.attention(view.queries[:, new])
        fresh = a.sum(1)
        fresh = fresh.reshape(view.n_kv_heads, view.model.group_size, -1).sum(1)
        view.state["upto"] = int(view.query_positions.max())
        return fresh + prev

    def select(self, view: LayerView) -> Keep:
        score = self._bump(view)
        view.remember("mass", score)
        tail = int(view.budget * self.tail_share)
        heavy = view.budget - tail
        n = view.n_tokens
        if n <= view.budget or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        _, top = torch.topk(score[:, : n - tail], heavy, dim=-1)
        top = top.sort().values
        recent = torch.arange(n - tail, n).repeat(top.shape[0], 1)
        idx = torch.cat([top, recent], dim=-1)
        keep = torch.zeros(score.shape, dtype=torch.bool).scatter(-1, idx, 1)
        return Keep(tuple(torch.nonzero(keep[h]).flatten() for h in range(view.n_kv_heads)))
