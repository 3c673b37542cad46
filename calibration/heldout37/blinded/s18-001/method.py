"""Odd Value Out: offline compression by the context-reconstruction pass, weighting each token's peak
reconstruction attention by how far its value sits from the head's average value."""

import torch

from harness import EvictionMethod, Keep, LayerView


class OddValueOut(EvictionMethod):
    name = "odd_value_out"
    reconstruction_queries = True
    rows = 128
    sinks = 4
    tail = 16
    lean = 0.5                  # exponent on the relative value deviation

    def peak(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        best = None
        for s in range(0, q.shape[1], self.rows):
            m = view.attention(q[:, s: s + self.rows]).amax(dim=1)      # (H_q, T)
            best = m if best is None else torch.maximum(best, m)
        return view.group(best, "max")

    def deviation(self, view: LayerView) -> torch.Tensor:
        v = view.values.float()
        valid = view.valid_mask().float()[..., None]
        mean = (v * valid).sum(1, keepdim=True) / valid.sum(1, keepdim=True).clamp_min(1.0)
        dev = (v - mean).norm(dim=-1)                                   # (H_kv, T)
        typical = (dev * valid[..., 0]).sum(1, keepdim=True) / valid[..., 0].sum(1, keepdim=True).clamp_min(1.0)
        return dev / typical.clamp_min(1e-6)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.peak(view) * self.deviation(view).pow(self.lean)
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : self.sinks] = float("inf")
            score[h, max(0, c - self.tail): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
