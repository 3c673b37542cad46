import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Rank fusion over the closing window: every (query head, window query) pair ranks the context tokens and the
    ranks are fused by reciprocal rank, so no single head's large probabilities dominate."""

    name = "rank_fusion"
    query_window = 32
    k0 = 60.0
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if view.queries is None or b >= t:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.attention()                                           # (H_q, W, T)
        order = a.argsort(dim=-1, descending=True)
        rank = torch.empty_like(order)
        ar = torch.arange(t, device=a.device).expand_as(order)
        rank.scatter_(-1, order, ar)                                   # 0 = most attended
        visible = view.positions[:, None, :].repeat_interleave(view.model.group_size, dim=0) \
            <= view.query_positions[None, :, None]
        fused = (visible.float() / (self.k0 + rank.float() + 1.0)).sum(dim=1)   # (H_q, T)
        s = view.group(fused, "sum")
        s[:, : self.n_sink] = float("inf")
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, b, view.valid)
