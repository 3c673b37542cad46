"""Landmark-contrast retention (board B_online).

Without the question, the safest thing to keep is what the cache cannot reconstruct from the rest. We pick a
handful of landmark entries per KV head (the keys with the largest L2 norm, which dominate attention wherever
they match) and then spend the budget on the entries that are *least* like each landmark: every landmark in
turn claims its share of the budget among the entries whose key direction is farthest from its own. What
remains is a cache of landmarks plus the material the landmarks do not already stand for.

The four opening entries and the newest 16 are kept; no attention is computed.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LandmarkContrast(EvictionMethod):
    name = "landmark_contrast"
    landmarks = 8
    opening = 4
    newest = 16

    def _head(self, keys: torch.Tensor, pos: torch.Tensor, budget: int) -> torch.Tensor:
        n = keys.shape[0]
        taken = torch.zeros(n, dtype=torch.bool, device=keys.device)
        taken[: min(self.opening, n)] = True
        taken[max(0, n - self.newest):] = True
        left = budget - int(taken.sum())
        if left <= 0:
            return pos.float().topk(budget).indices
        mag = keys.norm(dim=-1).masked_fill(taken, -1.0)
        n_lm = min(self.landmarks, left, int((~taken).sum()))
        marks = mag.topk(n_lm).indices
        taken[marks] = True
        left -= n_lm
        direction = keys / keys.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        likeness = direction @ direction[marks].T  # (n, n_lm)
        share = [left // n_lm + (1 if i < left % n_lm else 0) for i in range(n_lm)] if n_lm else []
        for i, quota in enumerate(share):
            if quota <= 0:
                continue
            col = likeness[:, i].masked_fill(taken, float("inf"))
            avail = int((~taken).sum())
            pick = (-col).topk(min(quota, avail)).indices
            taken[pick] = True
        return taken.nonzero().flatten()

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            if real.numel() <= view.budget:
                out.append(real)
                continue
            idx = self._head(view.keys[h, real].float(), view.positions[h, real], view.budget)
            out.append(real[idx].sort().values)
        return Keep(tuple(out))
