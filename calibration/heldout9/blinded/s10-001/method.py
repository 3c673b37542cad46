"""Sharp-or-broad reconstruction ranking (board B_offline).

KVzip (Kim et al., 2025, arXiv 2505.23416) scores each cached pair by the *maximum* attention it receives while the
model re-reads its context: a pair is kept if at least one repeat step needs it sharply. Some pairs matter in the
opposite way: no single repeat step singles them out, but many steps consult them a little (delimiters, the entity a
passage keeps coming back to). The mean over the repeat pass sees those and misses the sharp ones. We keep both
kinds: each head ranks its pairs by the max and by the mean, each ranking is turned into a percentile, and a pair's
score is the better of its two percentiles (ties broken by the max). The first 4 tokens are kept, as in KVzip.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _percentile(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    x = x.masked_fill(~valid, float("-inf"))
    order = x.argsort(dim=-1)
    ranks = torch.empty_like(x)
    ranks.scatter_(1, order, torch.arange(x.shape[1], device=x.device, dtype=x.dtype).expand_as(x).contiguous())
    pad = (~valid).sum(dim=1, keepdim=True)
    n = valid.sum(dim=1, keepdim=True).clamp_min(1)
    return ((ranks - pad) / n).clamp_min(0.0)


class SharpOrBroad(EvictionMethod):
    name = "sharp_or_broad"
    reconstruction_queries = True
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        sharp = view.group(view.attention(reduce="max"), "max")
        broad = view.group(view.attention(reduce="mean"), "mean")
        valid = view.valid_mask()
        best = torch.maximum(_percentile(sharp, valid), _percentile(broad, valid))
        score = best + 1e-3 * sharp / sharp.amax(dim=1, keepdim=True).clamp_min(1e-12)
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
