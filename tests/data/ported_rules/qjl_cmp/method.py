"""Compact-key scoring: keys become +1/-1 patterns of a fixed mixing matrix, scaled by their magnitude; the last
query's projection against the patterns estimates its logits; the top tokens per head are kept."""

import torch

from harness.api import EvictionMethod, Keep, LayerView

WIDTH = 128


class CompactKeys(EvictionMethod):
    name = "compact_keys"
    query_window = 1

    def setup(self, model) -> None:
        torch.manual_seed(11)
        self.mix = torch.randn(model.head_dim, WIDTH)

    def select(self, view: LayerView) -> Keep:
        proj = torch.matmul(view.keys.float(), self.mix)            # (H, T, m)
        pattern = (proj > 0).float() * 2.0 - 1.0
        scale = torch.linalg.vector_norm(view.keys.float(), dim=-1)  # (H, T)
        qp = torch.matmul(view.queries[:, -1:].float(), self.mix)   # (Hq, 1, m)
        qp = view.group(qp, "mean")                                 # (H, 1, m)
        logits = torch.matmul(qp, pattern.transpose(1, 2)).squeeze(1) * scale
        return Keep.from_topk(logits, view.budget, view.valid)
