"""Odd ones out: each head's keys and values are smoothed along the sequence (only their slow variation kept); the
tokens that stray furthest from their smooth version carry what is special and stay, with the newest ones."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class OddOnesOut(EvictionMethod):
    name = "odd_ones_out"
    keep_slow = 0.1
    newest = 32

    def _smooth(self, x: torch.Tensor) -> torch.Tensor:
        spec = torch.fft.rfft(x, dim=-2)
        cut = max(1, int(spec.shape[-2] * self.keep_slow))
        spec[..., cut:, :] = 0
        return torch.fft.irfft(spec, n=x.shape[-2], dim=-2)

    def select(self, view: LayerView) -> Keep:
        k, v = view.keys.float(), view.values.float()
        stray = torch.linalg.vector_norm(k - self._smooth(k), dim=-1)
        stray = stray / stray.amax(dim=-1, keepdim=True).clamp_min(1e-6)
        vstray = torch.linalg.vector_norm(v - self._smooth(v), dim=-1)
        score = stray + vstray / vstray.amax(dim=-1, keepdim=True).clamp_min(1e-6)
        score[:, -self.newest:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
