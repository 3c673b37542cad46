"""Aligned-copy reconstruction (board B_offline).

KVzip scores each cached pair by the largest attention any query of a "repeat the context" pass pays it. That
pass has more structure than a bag of queries: while the model re-reads context token t-1 it is predicting token
t, so that one query is the copy step that must find token t. A token the copy step finds easily is cheap to
lose only if nothing else depends on it; a token the copy step cannot find without it is exactly what the
cache must hold. We add the copy step's attention to KVzip's score:

    score_t = max_{repeat queries, group heads} a(q, t)  +  mean_{group heads} a(q_copy(t), t)

where q_copy(t) is the repeat query that reproduces token t (the repeat pass feeds the instruction and then the
context, so the query reading context token t-1 sits at offset len(instruction) + t - 1). The first four tokens
are always kept. Without a reconstruction pass (other boards) it keeps the most recent tokens.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416), whose reconstruction pass (the harness's
reconstruction_queries) and max score we use unchanged; the copy-step term is our addition.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class AlignedCopy(EvictionMethod):
    name = "aligned_copy"
    reconstruction_queries = True
    opening = 4
    rows_per_chunk = 256

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None or view.queries.shape[1] < n:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv = view.n_kv_heads
        peak = view.attention(view.queries, reduce="max")  # (H_q, T): repeat pass, not causal over the context
        peak = peak.reshape(h_kv, g, n).amax(dim=1)
        lead = view.queries.shape[1] - n  # the instruction's length: the repeat of token 0 starts after it
        copy = torch.zeros(view.queries.shape[0], n, device=peak.device)
        targets = torch.arange(1, n, device=peak.device)
        rows = lead + targets - 1  # the query that predicts token t
        for s in range(0, rows.numel(), self.rows_per_chunk):
            r, t = rows[s: s + self.rows_per_chunk], targets[s: s + self.rows_per_chunk]
            a = reference_attention(view.queries[:, r], view.keys, view.positions, None, g, scale=view.model.scale)
            copy[:, t] = a[:, torch.arange(t.numel(), device=a.device), t]
        score = peak + copy.reshape(h_kv, g, n).mean(dim=1)
        score[:, : self.opening] = float("inf")
        return Keep.from_topk(score, view.budget)
