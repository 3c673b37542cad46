"""KVPrior-Skim: KVPrior's score, with evictions amortised by skimming below the cap.

KVPrior evicts one token per step once the cap is reached, recomputing scores every step. Skim evicts
down to ``skim`` x the cap in one go, so the next several decode steps need no eviction, and it removes
whole low-scoring runs: the score of each token is replaced by the max over a small window, so isolated
low tokens inside important spans survive while long unimportant runs go together.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _z(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    vals = x.masked_fill(~valid, 0.0)
    count = valid.sum(dim=-1, keepdim=True).clamp_min(1)
    mean = vals.sum(dim=-1, keepdim=True) / count
    var = ((vals - mean) ** 2).masked_fill(~valid, 0.0).sum(dim=-1, keepdim=True) / count
    return (x - mean) / var.sqrt().clamp_min(1e-6)


class KVPriorSkim(EvictionMethod):
    name = "kvprior_skim"
    query_window = 8
    n_sink = 4
    n_recent = 64
    prior_weight = 0.5
    skim = 0.9  # evict down to this fraction of the cap
    run = 3  # window of the max-filter over scores (tokens)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        acc = view.recall("acc")
        if view.queries is not None:
            acc = acc + view.group(view.attention().sum(dim=1), "mean")
        view.remember("acc", acc)
        score = _z(acc, valid) + self.prior_weight * _z(-view.keys.float().norm(dim=-1), valid)
        score = F.max_pool1d(score[:, None, :], self.run, stride=1, padding=self.run // 2)[:, 0, :]
        score[:, : self.n_sink] = float("inf")
        score[:, -self.n_recent :] = float("inf")
        keep = int(view.budget * self.skim) if view.phase == "decode" else view.budget
        return Keep.from_topk(score, keep, valid)
