"""Echo ballot (board B_offline): while the model reads the context back, every head of the layer casts a
normalised ballot over the context, and the layer keeps one shared set of tokens.

The harness's one-off pass has the model re-read the context after a "repeat" instruction. For each re-reading
row, each query head of the layer turns its logits over the context into a ballot (its logits minus their
log-sum-exp, exponentiated: one unit of vote per head and row). Ballots are added over heads and rows; every KV
head keeps the same tokens, the ``n_open`` first and ``n_close`` last of the context plus the best-voted. Layers
without a re-reading pass keep their newest tokens.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class EchoBallot(EvictionMethod):
    name = "echo_ballot"
    reconstruction_queries = True
    n_open = 4
    n_close = 16
    rows_per_pass = 128

    def ballots(self, view: LayerView) -> torch.Tensor:
        """(T,) the layer's summed ballots over the context."""
        assert view.queries is not None
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        keys = view.keys.float()
        shut = None if view.valid is None else ~view.valid[:, None, None, :]
        tally = torch.zeros(t, device=keys.device)
        rows = view.queries.shape[1]
        for start in range(0, rows, self.rows_per_pass):
            chunk = view.queries[:, start: start + self.rows_per_pass].float()
            c = chunk.shape[1]
            logits = torch.einsum("hgcd,htd->hgct", chunk.reshape(h_kv, g, c, d), keys) * view.model.scale
            if shut is not None:
                logits = logits.masked_fill(shut, float("-inf"))
            ballot = (logits - torch.logsumexp(logits, dim=-1, keepdim=True)).exp()
            tally += ballot.nan_to_num(0.0).sum(dim=(0, 1, 2))
        return tally

    def select(self, view: LayerView) -> Keep:
        t, h = view.n_tokens, view.n_kv_heads
        if view.budget >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        tally = self.ballots(view)
        tally[: self.n_open] = float("inf")
        tally[max(0, t - self.n_close):] = float("inf")
        picked = tally.topk(min(view.budget, t)).indices.sort().values
        return Keep.same_for_all_heads(picked, h)
