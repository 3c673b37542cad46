"""Coarse-preview retention: a cheap preview of every key (a few levels per entry) is what the recent queries look
at; the tokens the preview ranks highest stay at full precision, with the newest few."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _preview(x: torch.Tensor, levels: int) -> torch.Tensor:
    top = x.abs().amax(dim=-1, keepdim=True).clamp_min(1e-6)       # one scale per token
    step = top / (levels // 2)
    return (x / step).round().clamp(-(levels // 2), levels // 2) * step


class CoarsePreview(EvictionMethod):
    name = "coarse_preview"
    query_window = 8
    levels = 4
    newest = 16

    def select(self, view: LayerView) -> Keep:
        approx = _preview(view.keys.float(), self.levels)
        g = view.model.group_size
        q = view.queries.float().reshape(view.n_kv_heads, g * view.queries.shape[1], -1)
        logits = torch.einsum("hnd,htd->hnt", q, approx) * view.keys.shape[-1] ** -0.5
        probs = torch.softmax(logits, dim=-1)
        s = probs.max(dim=1).values
        s[:, -self.newest:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
