"""Look-Ahead Spread: each stretch of the context is judged against the statistics of the stretch after it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class LookAheadSpread(EvictionMethod):
    name = "lookahead_spread"
    head_keep = 4
    stretch = 64

    @staticmethod
    def _spread(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        lo = ref.amin(dim=1, keepdim=True)
        hi = ref.amax(dim=1, keepdim=True)
        z = (x - lo) / (hi - lo).clamp_min(1e-6)
        return z.std(dim=-1)                                     # (H, L): how uneven the token is, channel-wise

    def select(self, view: LayerView) -> Keep:
        H, T, _ = view.keys.shape
        if view.budget >= T:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        L = self.stretch
        score = torch.full((H, T), float("inf"))
        body = T - self.head_keep
        full = body // L
        for i in range(full - 1):                                # the final stretch has no successor: kept whole
            a = self.head_keep + i * L
            b = a + L
            ks, vs = view.keys[:, a:b].float(), view.values[:, a:b].float()
            kr, vr = view.keys[:, b:b + L].float(), view.values[:, b:b + L].float()
            s = self._spread(ks, kr).softmax(-1) + self._spread(vs, vr).softmax(-1)
            score[:, a:b] = s
        tail_start = self.head_keep + max(0, full - 1) * L
        score[:, tail_start:] = score[:, tail_start:].clamp_max(1e4) + view.positions[:, tail_start:].float() * 1e-9 + 10.0
        return Keep.from_topk(score, view.budget, view.valid)
