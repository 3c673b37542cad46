"""Centred Outliers: keep the keys that deviate most from their head's mean key (query-free)."""

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


class CentredOutliers(EvictionMethod):
    name = "centred_outliers"
    n_sink = 4
    recent_frac = 0.125

    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float().cpu().numpy()            # (H, T, D)
        valid = view.valid_mask().cpu().numpy()           # (H, T)
        pos = view.positions.cpu().numpy()
        out = []
        for h in range(keys.shape[0]):
            idx = np.flatnonzero(valid[h])
            k = keys[h, idx]
            dev = np.linalg.norm(k - k.mean(axis=0, keepdims=True), axis=1)  # distance to the centroid
            b = min(view.budget, idx.size)
            recent = min(b, max(1, int(self.recent_frac * view.budget)))
            dev[pos[h, idx] < self.n_sink] = np.inf
            dev[idx.size - recent:] = np.inf
            order = np.argsort(-dev, kind="stable")[:b]
            out.append(torch.as_tensor(np.sort(idx[order]), dtype=torch.long, device=view.keys.device))
        return Keep(tuple(out))
