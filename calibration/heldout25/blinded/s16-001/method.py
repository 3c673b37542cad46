"""Runner-up echo (board B_offline, reconstruction pass).

KVzip (Kim et al., 2025, arXiv:2505.23416) scores each entry by the *maximum* attention it receives from any query
of the reconstruction pass. A maximum is decided by one query: a single stray spike (a query that happens to land
on a separator, a sink-like entry) keeps an entry that the rest of the pass never needs. Runner-up echo scores an
entry by its *second-highest* attention during the pass instead: an entry is kept when at least two reconstruction
queries lean on it. Everything else (the pass, group maximum, per-head top-k) is KVzip's; the runner-up statistic
is our change, as far as we know not in the literature.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class RunnerUpEcho(EvictionMethod):
    name = "runner_up_echo"
    reconstruction_queries = True
    rows_per_chunk = 128
    sinks = 4

    def _top2(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        h_q, t = q.shape[0], view.n_tokens
        best = torch.zeros(h_q, t, device=view.keys.device)
        second = torch.zeros_like(best)
        for s in range(0, q.shape[1], self.rows_per_chunk):
            probs = view.attention(q[:, s:s + self.rows_per_chunk])           # (H_q, c, T), no causal mask
            if probs.shape[1] >= 2:
                two = probs.topk(2, dim=1).values                              # (H_q, 2, T)
                c1, c2 = two[:, 0], two[:, 1]
            else:
                c1, c2 = probs[:, 0], torch.zeros_like(best)
            # merge the chunk's top two into the running top two
            stacked = torch.stack([best, second, c1, c2], dim=1)
            top = stacked.topk(2, dim=1).values
            best, second = top[:, 0], top[:, 1]
        return second

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(self._top2(view), "max")
        first = view.positions.min(dim=-1, keepdim=True).values
        score = score.masked_fill(view.positions < first + self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
