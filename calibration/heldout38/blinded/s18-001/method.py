"""Spread Recall: KVzip's reconstruction scores, with half of the budget spent on variety.

KVzip (Kim et al., 2025) keeps the tokens that the model's re-reading of its own context attends to most (the
maximum over the reconstruction queries). Many of the top tokens of a head are near-duplicates (the same
entity repeated, a run of similar filler), so a top-k fills the cache with copies. Here the first half of the
budget goes to the plain top KVzip scores; the second half is chosen in small rounds by maximal marginal
relevance (Carbonell and Goldstein, 1998): score minus lambda times the largest key cosine similarity to any
token already kept, so that the remainder covers directions the first half missed. Scores are scaled to [0, 1]
per head first; lambda = 0.3, rounds of 16 tokens.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class SpreadRecall(EvictionMethod):
    name = "spread_recall"
    reconstruction_queries = True
    query_window = 32        # fallback when no reconstruction pass is offered
    lam = 0.3
    step = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = view.group(view.attention(reduce="max"), "max")
        score = score / score.amax(dim=1, keepdim=True).clamp_min(1e-12)
        unit = torch.nn.functional.normalize(view.keys.float(), dim=-1)
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            s, u = score[h, idx], unit[h, idx]
            budget = min(view.budget, idx.numel())
            first = s.topk(budget // 2).indices
            taken = torch.zeros(idx.numel(), dtype=torch.bool, device=s.device)
            taken[first] = True
            close = (u @ u[first].T).amax(dim=1) if first.numel() else torch.full_like(s, -1.0)
            while int(taken.sum()) < budget:
                n = min(self.step, budget - int(taken.sum()))
                gain = (s - self.lam * close).masked_fill(taken, -float("inf"))
                pick = gain.topk(n).indices
                taken[pick] = True
                close = torch.maximum(close, (u @ u[pick].T).amax(dim=1))
            out.append(idx[taken.nonzero().flatten()])
        return Keep(tuple(out))
