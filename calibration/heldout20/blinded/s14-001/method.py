"""Persistence-of-importance eviction: a port of Scissorhands (Liu et al., NeurIPS 2023, arXiv 2305.17118).

This is a port. Scissorhands observes that tokens which were important in a recent history window stay important
later (the persistence of importance hypothesis). When the cache is full it counts, for every cached token, how many
queries of the recent history window gave it *low* attention (below the uniform share), and evicts the tokens with
the highest such counts; a recent window is never evicted.

Deviations from the paper (the porter's choices, training-free):
- history window: the newest 64 queries the harness hands over at each eviction round (the paper uses a fixed
  history of w steps); counts are recomputed each round, not carried over;
- "low attention" threshold: 1 / (number of tokens the query can see), i.e. the uniform share;
- the newest 32 tokens are protected (the paper's recent window);
- the harness evicts a block (an eighth of the cap) at a time rather than one token per step;
- ties in the count are broken by the summed attention over the window.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ScissorhandsPort(EvictionMethod):
    name = "scissorhands_port"
    query_window = 64
    recent = 32

    def select(self, view: LayerView) -> Keep:
        att = view.attention()                                       # (H_q, N, T)
        g = view.model.group_size
        live = view.valid_mask()
        seen = (view.positions.repeat_interleave(g, dim=0)[:, None, :] <= view.query_positions.view(1, -1, 1))
        seen &= live.repeat_interleave(g, dim=0)[:, None, :]
        share = 1.0 / seen.sum(dim=-1, keepdim=True).clamp_min(1)
        low = ((att < share) & seen).float().sum(dim=1)            # (H_q, T): unimportant counts
        low = view.group(low, "sum")
        mass = view.group(att.sum(dim=1), "sum")
        keep_score = -low + mass / (mass.amax(dim=1, keepdim=True) + 1e-9)   # tie-break in (0, 1]

        pos = view.positions.masked_fill(~live, -1)
        top = pos.max(dim=1, keepdim=True).values
        keep_score = keep_score.masked_fill(pos > top - self.recent, 1e9)
        return Keep.from_topk(keep_score, view.budget, view.valid)
