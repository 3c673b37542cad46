"""Quantile-coded keys: the rotary turn of every key is undone by hand, each feature snaps to the nearest of a few
levels placed at that feature's own quantiles, and the last query reads the snapped keys."""

import torch

from harness.api import EvictionMethod, Keep, LayerView, rotate_half


class QuantileCoded(EvictionMethod):
    name = "quantile_coded"
    query_window = 1
    n_levels = 8

    def _plain_keys(self, view: LayerView) -> torch.Tensor:
        cos, sin = view.model.rope(view.layer).angles(view.positions[0])
        k = view.keys.float()
        return k * cos - rotate_half(k) * sin

    def _snap(self, x: torch.Tensor) -> torch.Tensor:
        probs = (torch.arange(self.n_levels, dtype=torch.float32) + 0.5) / self.n_levels
        levels = torch.quantile(x.transpose(1, 2), probs, dim=-1).permute(1, 2, 0)  # (H, D, L)
        nearest = (x[..., None] - levels[:, None]).abs().argmin(dim=-1)                # (H, T, D)
        return torch.gather(levels[:, None].expand(*x.shape, self.n_levels), 3, nearest[..., None])[..., 0]

    def select(self, view: LayerView) -> Keep:
        coded = self._snap(self._plain_keys(view))
        q = view.rotate(view.queries.float(), -view.query_positions)
        q = q.reshape(coded.shape[0], -1, coded.shape[-1])
        score = (q @ coded.transpose(1, 2)).softmax(-1).amax(1)
        return Keep.from_topk(score, view.budget, view.valid)
