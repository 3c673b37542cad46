"""Local Contrast Recall: reconstruction attention, lifted for tokens whose values stand out from their
neighbours.

KVzip scores each context token by the largest attention it receives during a pass that re-reads the context.
Runs of near-identical tokens (padding-like filler, repeated phrases) can all score well there, yet keeping one
of them is almost as good as keeping all. Here the KVzip score is multiplied by 1 + c, where c is the token's
local value contrast: the distance from its value vector to the mean value of its 8 neighbours (4 each side),
divided by the head's median of that distance. Tokens that say something their surroundings do not get a lift.
The first 4 tokens are kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LocalContrastRecall(EvictionMethod):
    name = "local_contrast_recall"
    reconstruction_queries = True
    half_width = 4
    sinks = 4

    def _contrast(self, view: LayerView) -> torch.Tensor:
        v = view.values.float()                                     # (H_kv, T, D)
        k = 2 * self.half_width + 1
        flat = v.transpose(1, 2)                                    # (H_kv, D, T)
        # zero padding at the edges: the pooled sums count only real neighbours, and n_in says how many
        total = F.avg_pool1d(flat, k, stride=1, padding=self.half_width, count_include_pad=True) * k
        ones = torch.ones(1, 1, v.shape[1], device=v.device)
        n_in = F.avg_pool1d(ones, k, stride=1, padding=self.half_width, count_include_pad=True) * k
        neigh = (total - flat) / (n_in - 1).clamp_min(1)
        dist = (flat - neigh).norm(dim=1)                          # (H_kv, T)
        return dist / dist.median(dim=-1, keepdim=True).values.clamp_min(1e-6)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        best = torch.zeros(view.queries.shape[0], view.n_tokens, device=view.keys.device)
        for s in range(0, view.queries.shape[1], 128):
            best = torch.maximum(best, view.attention(view.queries[:, s:s + 128]).amax(dim=1))
        score = view.group(best, "max") * (1.0 + self._contrast(view))
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
