"""Output-shift retention: keep the tokens whose removal would move the layer's read-out the most."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _readout_shift(weights: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
    """weights (T,), vals (T, D): how far the weighted read-out moves when each token leaves."""
    readout = weights @ vals
    spread = torch.linalg.vector_norm(vals - readout, dim=1)
    return spread * weights / torch.clamp(1.0 - weights, min=1e-6)


class OutputShiftRetention(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention(reduce="mean")
        per_kv = []
        g = view.model.group_size
        for kv in range(view.n_kv_heads):
            vals = view.values[kv].float()
            shifts = [_readout_shift(probs[kv * g + j], vals) for j in range(g)]
            per_kv.append(torch.stack(shifts).mean(0))
        score = torch.stack(per_kv)
        recent = view.positions >= int(view.query_positions[0])
        score = torch.where(recent, torch.full_like(score, 1e9), score)
        return Keep.from_topk(score, view.budget, view.valid)
