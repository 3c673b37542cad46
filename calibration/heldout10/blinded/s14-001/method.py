"""Question-conditioned retention gate (board A).

Every token gets a keep/evict gate; tokens whose gate opens are kept, and the budget is filled by gate strength.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
TAIL = 16
TEMP = 1.0


class QuestionGate(EvictionMethod):
    name = "question_gate"

    def _gate(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        probe = view.keys.float().repeat_interleave(g, dim=0)               # (H_q, T, D)
        received = view.attention(probe, reduce="sum")                     # (H_q, T): bidirectional
        received = view.group(received, "mean")
        mu = received.mean(dim=-1, keepdim=True)
        sd = received.std(dim=-1, keepdim=True).clamp_min(1e-6)
        return torch.sigmoid((received - mu) / (sd * TEMP))

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        gate = self._gate(view)
        opened = gate > 0.5
        strength = gate + opened.float()
        pinned = torch.zeros_like(gate, dtype=torch.bool)
        pinned[:, :SINKS] = True
        pinned[:, max(0, t - TAIL):] = True
        strength = strength.masked_fill(pinned, float("inf"))
        return Keep.from_topk(strength, view.budget)
