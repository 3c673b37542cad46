"""Next Door: attention-free prefill eviction that judges each stretch of the context by the statistics of the
stretch after it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class NextDoor(EvictionMethod):
    name = "next_door"
    sink = 16                   # opening tokens, always kept
    stretch = 256               # tokens per stretch
    eps = 1e-6

    def _spread(self, x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        """(H, n, D) scaled into the (H, m, D) neighbour's per-channel range; spread across channels, (H, n)."""
        lo = ref.amin(dim=1, keepdim=True)
        hi = ref.amax(dim=1, keepdim=True)
        return ((x - lo) / (hi - lo + self.eps)).std(dim=-1)

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n_full = (t - self.sink) // self.stretch
        k, v = view.keys.float(), view.values.float()
        pos = view.positions.float()
        # the sink first, then the stretch without a neighbour (and what is left over after it), newest first
        score = 1e9 + pos
        score[:, : self.sink] = 2e9
        for i in range(n_full - 1):
            a = self.sink + i * self.stretch
            b, c = a + self.stretch, a + 2 * self.stretch
            score[:, a:b] = self._spread(k[:, a:b], k[:, b:c]) + self._spread(v[:, a:b], v[:, b:c])
        return Keep.from_topk(score, view.budget, view.valid)
