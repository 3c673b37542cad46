import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Regime-aware eviction: each layer declares itself local or global from its own closing attention."""

    name = "regime_switch"
    query_window = 8
    n_anchor = 4
    local_mass = 0.9

    def _edge_mass(self, view: LayerView, probs: torch.Tensor, recent: int) -> float:
        last = probs[:, -1, :]                                        # the final query's attention (H_q, T)
        t = last.shape[-1]
        edge = torch.zeros(t, dtype=torch.bool, device=last.device)
        edge[: self.n_anchor] = True
        edge[max(0, t - recent):] = True
        return float(last[:, edge].sum(dim=-1).mean())

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        order = view.positions.float()
        if view.queries is None or b >= t:
            return Keep.from_topk(order, b, view.valid)
        probs = view.attention()
        recent = max(1, b - self.n_anchor)
        if self._edge_mass(view, probs, recent) >= self.local_mass:
            # a local layer: the edges already carry what it reads
            s = order.clone()
            s[:, : self.n_anchor] = float("inf")
            return Keep.from_topk(s, b, view.valid)
        s = view.group(probs.sum(dim=1), "mean")
        s[:, : self.n_anchor] = float("inf")
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, b, view.valid)
