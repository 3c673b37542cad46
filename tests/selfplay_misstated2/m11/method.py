"""Reconstruction attention and key norm, mixed by a hand-set depth table (board B_offline)."""

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class DepthTableMix(EvictionMethod):
    name = "depth_table_mix"
    reconstruction_queries = True
    n_sink = 4
    # weight of the reconstruction-attention rank in each quarter of depth; the key-norm rank gets the rest
    table = (0.55, 0.75, 0.90, 1.00)

    def setup(self, model: ModelInfo) -> None:
        self.layers = list(model.attention_layers)

    def _weight(self, layer: int) -> float:
        layers = getattr(self, "layers", None) or [layer]
        depth = layers.index(layer) / max(1, len(layers) - 1) if layer in layers else 0.0
        return self.table[min(len(self.table) - 1, int(depth * len(self.table)))]

    @staticmethod
    def _rank(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Per-head rank in [0, 1] among the valid entries (padding gets 0)."""
        x = x.masked_fill(~valid, float("-inf"))
        r = x.argsort(dim=1).argsort(dim=1).float()
        pad = (~valid).sum(dim=1, keepdim=True).float()
        n = valid.sum(dim=1, keepdim=True).float()
        return ((r - pad) / (n - 1).clamp_min(1)).clamp_min(0).masked_fill(~valid, 0.0)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        knorm_rank = self._rank(-view.keys.float().norm(dim=-1), valid)
        if view.queries is None:
            scores = knorm_rank
        else:
            attn = view.group(view.attention(view.queries, reduce="max"), "max")
            w = self._weight(view.layer)
            scores = w * self._rank(attn, valid) + (1 - w) * knorm_rank
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
