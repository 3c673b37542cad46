"""Confidence-weighted replay mass (board B_offline).

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): the model re-reads its context after a "repeat the previous
context" instruction, and a cached pair is worth keeping if the repeat pass needs it. KVzip scores each pair by the
*maximum* attention any repeat query pays it, so a single stray query with a sharp but misplaced peak can rescue a token
on its own. We replace the max by a confidence-weighted mean: each repeat query's attention row is weighted by its own
peak (a query that is confidently aligned with the token it is reproducing has a high peak; a confused one spreads
its mass and gets little say), summed over the queries, normalised by the total weight, and the largest value over the
KV head's query heads is kept. As in KVzip, the first 4 tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ConfidenceWeightedReplay(EvictionMethod):
    name = "confidence_weighted_replay"
    reconstruction_queries = True
    n_sink = 4
    chunk = 256

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_q, r, _ = view.queries.shape
        t = view.n_tokens
        mass = torch.zeros(h_q, t, device=view.keys.device)
        weight = torch.zeros(h_q, 1, device=view.keys.device)
        for s in range(0, r, self.chunk):
            rows = view.attention(view.queries[:, s:s + self.chunk])         # (H_q, c, T): all context visible
            peak = rows.amax(dim=-1, keepdim=True)                          # (H_q, c, 1)
            mass += (rows * peak).sum(dim=1)
            weight += peak.sum(dim=1)
        score = view.group(mass / weight.clamp_min(1e-9), "max")
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
