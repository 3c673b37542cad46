"""Odd One Out: query-free prefill eviction that keeps the keys that least resemble their head's typical key."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class OddOneOut(EvictionMethod):
    name = "odd_one_out"
    tail = 8                    # the context's last tokens stay

    def _content_keys(self, view: LayerView) -> torch.Tensor:
        """Keys as compared: unit-normalised per token."""
        return F.normalize(view.keys.float(), dim=-1)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        k = self._content_keys(view)                                  # (H_kv, T, D)
        valid = view.valid_mask().float()[..., None]
        typical = (k * valid).sum(1, keepdim=True) / valid.sum(1, keepdim=True).clamp_min(1.0)
        likeness = (k * F.normalize(typical, dim=-1)).sum(-1)         # cosine to the typical key
        score = -likeness
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.tail): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
