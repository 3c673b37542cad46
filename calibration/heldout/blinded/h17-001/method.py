import torch

from harness.api import EvictionMethod, Keep, LayerView


class SteadyHeads(EvictionMethod):
    """Heads whose window attention is steady across the window queries get fewer slots; inside a head, tokens
    are ranked by low key norm."""

    query_window = 32
    floor = 0.3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(), "mean")                # (H, W, T)
        unsteady = att.var(dim=1).sum(dim=-1)                       # (H,) temporal shift per head
        share = unsteady / unsteady.sum().clamp_min(1e-9)
        total = view.budget * view.n_kv_heads
        base = int(view.budget * self.floor)
        per_head = (base + share * (total - base * view.n_kv_heads)).floor().long()
        per_head = per_head.clamp(max=view.n_tokens)
        rank = -view.keys.float().norm(dim=-1)
        return Keep.from_topk(rank, per_head, view.valid)
