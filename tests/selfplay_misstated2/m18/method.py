"""Key diversity with a spread-adaptive recent window (board C)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DiverseKeysAdaptiveTail(EvictionMethod):
    name = "diverse_keys_adaptive_tail"
    min_tail = 0.05
    max_tail = 0.5
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        k = F.normalize(view.keys.float(), dim=-1)                           # (H_kv, T, D)
        w = valid.float()[:, :, None]
        anchor = F.normalize((k * w).sum(dim=1) / w.sum(dim=1).clamp_min(1), dim=-1)   # (H_kv, D)
        cos = torch.einsum("htd,hd->ht", k, anchor)                          # (H_kv, T)
        scores = -cos                                                        # least similar to the anchor first
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            c = cos[h][valid[h]]
            spread = float(c.std()) if c.numel() > 1 else 0.0
            frac = min(self.max_tail, max(self.min_tail, spread))
            tail = min(int(round(frac * view.budget)), n)
            scores[h, max(0, n - tail): n] = float("inf")
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
