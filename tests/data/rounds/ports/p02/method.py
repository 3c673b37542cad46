"""Displacement guard (board A): rank each cached entry by how far the question's read-out would move if that
entry were taken away."""

import torch

from harness import EvictionMethod, Keep, LayerView


class DisplacementGuard(EvictionMethod):
    name = "displacement_guard"
    question_queries = True
    query_window = 4
    anchors = 2          # opening entries never dropped

    def _shift(self, view: LayerView) -> torch.Tensor:
        w = view.attention()                          # (H_q, N, T)
        vals = view.values.float()                    # (H_kv, T, D)
        g = view.model.group_size
        shift = torch.zeros(view.n_kv_heads, view.n_tokens, device=vals.device)
        for qh in range(w.shape[0]):
            kv = qh // g
            readout = w[qh] @ vals[kv]                                  # (N, D)
            gap = torch.cdist(readout, vals[kv])                        # (N, T) distance of each value to the read-out
            odds = w[qh] / (1.0 - w[qh]).clamp_min(1e-6)               # renormalisation factor after removal
            shift[kv] += (odds * gap).sum(dim=0)
        return shift

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = self._shift(view)
        s = s.masked_fill(view.positions < self.anchors, float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
