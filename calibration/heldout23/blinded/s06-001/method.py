"""Near-best votes (board B_offline, one-off reconstruction pass).

KVzip (Kim et al., 2025, arXiv 2505.23416) scores a cached token by the maximum attention it receives over the
rows of the reconstruction pass (the model repeating its context). A maximum is decided by one row; a token that
several rows need, each a little less than their favourite, can lose to a token one row spikes on. Here every
row of the pass (and every query head of the group) votes for the tokens it attends to at least half as much as
its own favourite token; a token's score is its number of votes, with KVzip's max-attention score as the
tie-break. The first 4 tokens are kept, as in KVzip. Counting the rows that find a token important is
Scissorhands' persistence count (Liu et al., 2023, arXiv 2305.17118: above-average attention over a history
window); here the threshold is relative to each row's best token and the rows are KVzip's reconstruction pass.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class NearBestVotes(EvictionMethod):
    name = "near_best_votes"
    reconstruction_queries = True
    ratio = 0.5
    n_sink = 4
    chunk = 128

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_q, n, _ = view.queries.shape
        votes = torch.zeros(h_q, view.n_tokens, device=view.keys.device)
        peak = torch.zeros(h_q, view.n_tokens, device=view.keys.device)
        for s in range(0, n, self.chunk):
            a = view.attention(view.queries[:, s:s + self.chunk])              # (H_q, c, T), the pass sees all
            best = a.amax(-1, keepdim=True)
            votes += (a >= self.ratio * best).sum(1)
            peak = torch.maximum(peak, a.amax(1))
        votes = view.group(votes, "sum")
        peak = view.group(peak, "max")
        score = votes + peak                                                    # peak < 1: a tie-break only
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
