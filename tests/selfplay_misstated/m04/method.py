"""Probe-Aligned Keys: key-norm scoring with attention sinks and a recent window."""

import torch

from harness import EvictionMethod, Keep, LayerView


class ProbeAlignedKeys(EvictionMethod):
    name = "probe_aligned_keys"
    n_sink = 4
    recent = 32

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        scores = -torch.linalg.vector_norm(k, ord=2, dim=-1)  # (H_kv, T)
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            scores[h, max(0, c - self.recent):c] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
