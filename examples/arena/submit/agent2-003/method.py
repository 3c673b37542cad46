"""KVPrior: decode-time eviction by accumulated attention plus a key-norm prior.

Every time a layer's cache goes over its cap, the attention that the recent decode queries gave each
cached token is added to a running total (carried across calls by position). Fresh tokens have had no
time to accumulate, so a prior helps: low key norm predicts attention. Score = z(accumulated) +
prior_weight * z(-||k||); sinks and the most recent tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _z(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    vals = x.masked_fill(~valid, 0.0)
    count = valid.sum(dim=-1, keepdim=True).clamp_min(1)
    mean = vals.sum(dim=-1, keepdim=True) / count
    var = ((vals - mean) ** 2).masked_fill(~valid, 0.0).sum(dim=-1, keepdim=True) / count
    return (x - mean) / var.sqrt().clamp_min(1e-6)


class KVPrior(EvictionMethod):
    name = "kvprior"
    query_window = 8  # queries of the last decode steps
    n_sink = 4
    n_recent = 64
    prior_weight = 0.5

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        acc = view.recall("acc")
        if view.queries is not None:
            acc = acc + view.group(view.attention().sum(dim=1), "mean")
        view.remember("acc", acc)
        score = _z(acc, valid) + self.prior_weight * _z(-view.keys.float().norm(dim=-1), valid)
        score[:, : self.n_sink] = float("inf")
        score[:, -self.n_recent :] = float("inf")
        return Keep.from_topk(score, view.budget, valid)
