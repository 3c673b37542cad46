"""Lattice-and-latest retention (board C, decode-time; query-free).

Reasoning traces refer back in two ways: to the immediate past (the step being worked on) and to landmarks spread
over everything before it (the problem's numbers, earlier intermediate results). Score-based eviction on a 135M
model is noisy at decode time, so we keep a fixed, content-free layout that serves both:

- latest: the newest half of the budget, contiguous;
- lattice: older positions p whose offset within a stride s falls in the last c slots of the stride
  (p mod s >= s - c, c = 4), i.e. short runs of 4 tokens at a regular spacing; s is the smallest multiple of c for
  which the lattice over the older part fits the rest of the budget;
- if the lattice leaves room, the newest older tokens fill it.

Costs nothing to compute and needs no queries; the layout is decided by positions alone, so every head and every
layer keeps the same positions.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LatticeAndLatest(EvictionMethod):
    name = "lattice_and_latest"
    run = 4

    def _layout(self, pos: torch.Tensor, budget: int) -> torch.Tensor:
        n = pos.numel()
        if n <= budget:
            return torch.arange(n)
        latest = budget - budget // 2
        older = n - latest
        room = budget - latest
        keep = torch.zeros(n, dtype=torch.bool)
        keep[older:] = True
        if room > 0:
            stride = self.run
            while True:
                marks = (pos[:older] % stride) >= stride - self.run
                if int(marks.sum()) <= room:
                    break
                stride += self.run
            keep[:older] |= marks
            spare = budget - int(keep.sum())
            if spare > 0:
                free = torch.nonzero(~keep).flatten()
                keep[free[-spare:]] = True
        return torch.nonzero(keep).flatten()

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            out.append(self._layout(view.positions[h, :n], view.budget))
        return Keep(tuple(out))
