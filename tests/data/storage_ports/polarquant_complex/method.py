"""Phase-coded keys: consecutive feature pairs read as complex numbers, each phase rounded to one of a few steps with
the modulus kept; the last query ranks the tokens by its attention over the phase-coded keys."""

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


class PhaseCoded(EvictionMethod):
    name = "phase_coded"
    query_window = 1
    steps = 16

    def _phase_code(self, k: torch.Tensor) -> torch.Tensor:
        z = torch.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2).contiguous())
        unit = 2 * math.pi / self.steps
        phase = torch.round(z.angle() / unit) * unit
        return torch.view_as_real(torch.polar(z.abs(), phase)).flatten(-2)

    def select(self, view: LayerView) -> Keep:
        kc = self._phase_code(view.keys)
        q = view.group(view.queries.float(), "mean")
        att = torch.softmax(torch.einsum("hnd,htd->hnt", q, kc), dim=-1)[:, -1]
        return Keep.from_topk(att, view.budget, view.valid)
