"""Peak-hold memory (board C, decode-time).

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048), TOVA (Oren et al., 2024, arXiv 2401.06104) and A2SF
(Jo et al., 2024, arXiv 2407.20485). H2O sums a token's attention over all steps (old tokens win by having been
around), TOVA looks only at the current step (a token needed every few hundred steps is lost in a quiet
moment), A2SF decays the sum exponentially. This method borrows the peak meter of audio level displays: each
token holds the highest attention it has received in any one eviction round, and that held peak is released
linearly with the number of decode steps since it was set. A token that was once decisive survives quiet
stretches for a while, but not forever; a token that never peaked is compared at its current level. The
newest tokens are kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class PeakHoldMemory(EvictionMethod):
    name = "peak_hold_memory"
    query_window = 32
    newest = 8
    release_per_cap = 1.5      # a held peak falls by this much (in units of 1/T) every cap's worth of steps

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        n_live = int(ok.sum(-1).max())
        if view.budget >= n_live or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        now = view.group(view.attention(reduce="mean"), "max") * n_live     # 1 = uniform attention
        held = view.recall("held", fill=0.0)
        when = view.recall("when", fill=-1.0)
        step = float(view.query_positions.max())
        age = torch.where(when >= 0, step - when, torch.zeros_like(when))
        cap = max(1, n_live)
        released = held - self.release_per_cap * age / cap
        new_peak = now >= released
        level = torch.where(new_peak, now, released)
        view.remember("held", torch.where(new_peak, now, held))
        view.remember("when", torch.where(new_peak, torch.full_like(when, step), when))
        top = view.positions.masked_fill(~ok, -1).max(-1, keepdim=True).values
        level = level.masked_fill(view.positions > top - self.newest, float("inf"))
        return Keep.from_topk(level, view.budget, view.valid)
