"""Seam Keeper: window attention plus a bonus for tokens where the key stream changes course.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the main signal: the attention of the context's last
32 queries, summed over the window and averaged over each KV head's query heads. Beside it, a local novelty
term: how far a key points away from the mean of the eight keys just before it (1 - cosine). KeyDiff (Park et
al., 2025, arXiv 2504.15364) measures distinctiveness against the mean of the whole cache and R-KV (Cai et al.,
2025, arXiv 2505.24133) penalises keys that repeat others; this term is local instead, and it is meant to find
seams, the places where a new record, name or number starts, which a question asked later tends to need.
The two terms are combined by rank (percentiles, novelty weighted 0.5) so that neither scale dominates.
The window itself is kept.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def _percentile_rank(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    x = x.masked_fill(~valid, float("-inf"))
    ranks = x.argsort(dim=-1).argsort(dim=-1).float()
    n_pad = (~valid).sum(dim=-1, keepdim=True)
    return (ranks - n_pad).clamp_min(0) / valid.sum(dim=-1, keepdim=True).clamp_min(1)


class SeamKeeper(EvictionMethod):
    name = "seam_keeper"
    query_window = 32
    lookback = 8
    novelty_weight = 0.5

    def local_novelty(self, keys: torch.Tensor) -> torch.Tensor:
        k = F.normalize(keys.float(), dim=-1)
        csum = F.pad(k.cumsum(dim=1), (0, 0, 1, 0))  # (H, T+1, D)
        t = torch.arange(k.shape[1], device=k.device)
        lo = (t - self.lookback).clamp_min(0)
        prev_sum = csum[:, t] - csum[:, lo]
        count = (t - lo).clamp_min(1).float()[None, :, None]
        prev_mean = F.normalize(prev_sum / count, dim=-1)
        novelty = 1.0 - (k * prev_mean).sum(dim=-1)
        novelty[:, 0] = 0.0
        return novelty

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "mean")
        score = _percentile_rank(attn, valid) + self.novelty_weight * _percentile_rank(self.local_novelty(view.keys), valid)
        window = view.positions >= view.query_positions.min()
        return Keep.from_topk(score.masked_fill(window, float("inf")), view.budget, view.valid)
