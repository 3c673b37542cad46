"""Axis Gate: project every key on one learned-free axis per head and keep the keys that stand out on it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class AxisGate(EvictionMethod):
    name = "axis_gate"
    query_window = 64
    lead = 4
    tail = 16

    def _axis(self, sample: torch.Tensor) -> torch.Tensor:
        """Leading right-singular vector of sample (m, D), oriented so the sample mostly projects positively."""
        _, _, vh = torch.linalg.svd(sample, full_matrices=False)
        axis = vh[0]
        return axis if float((sample @ axis).mean()) >= 0 else -axis

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        H, _, D = view.keys.shape
        q = view.queries.float().reshape(H, -1, D)
        axes = torch.stack([self._axis(q[h]) for h in range(H)])               # (H, D)
        score = (view.keys.float() * axes[:, None, :]).sum(dim=-1)              # (H, T)
        score[:, : self.lead] = float("inf")
        score[:, max(0, n - self.tail):] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
