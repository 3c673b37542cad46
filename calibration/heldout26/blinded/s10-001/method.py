"""In-step reconstruction score (board B_offline, with the reconstruction pass).

KVzip scores a cached token by the most attention any row of the repeat pass pays it. Every row counts, so a
token that some unrelated row happens to stare at (sink-like tokens, punctuation the model uses as a resting
place) scores as high as one the model actually needs to write the context back. In-step scoring asks
instead how much attention the token gets *while the repeat is at its place*: from the rows that read the few
tokens just before it (they are about to write it) or the token itself. That in-step maximum is blended with
KVzip's maximum over the whole pass (0.7 / 0.3), so tokens reused far from their own place are not lost
entirely. The first 4 tokens are kept.

Without a reconstruction pass (other boards) it keeps the first 4 and the newest tokens.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class InStepReconstruction(EvictionMethod):
    name = "in_step_reconstruction"
    reconstruction_queries = True
    behind = 4            # rows reading up to this many tokens before a token count as in step
    in_step_weight = 0.7
    sinks = 4
    rows_per_chunk = 128

    def _recency(self, view: LayerView) -> Keep:
        pos = view.positions.float()
        first = view.positions.masked_fill(~view.valid_mask(), 1 << 40).amin(dim=1, keepdim=True)
        return Keep.from_topk(pos.masked_fill(view.positions < first + self.sinks, float("inf")), view.budget,
                              view.valid)

    def select(self, view: LayerView) -> Keep:
        q = view.queries
        if q is None or view.budget >= view.n_tokens or q.shape[1] <= view.n_tokens:
            return self._recency(view)
        t = view.n_tokens
        lead = q.shape[1] - t
        token = torch.arange(t, device=view.keys.device)
        in_step = torch.zeros(q.shape[0], t, device=view.keys.device)
        anywhere = torch.zeros_like(in_step)
        for s in range(0, q.shape[1], self.rows_per_chunk):
            e = min(q.shape[1], s + self.rows_per_chunk)
            a = view.attention(q[:, s:e])                                   # (H_q, c, T)
            anywhere = torch.maximum(anywhere, a.amax(dim=1))
            reads = torch.arange(s, e, device=a.device) - lead              # token each row reads (< 0: instruction)
            gap = token.view(1, -1) - reads.view(-1, 1)                     # (c, T): how far ahead the token is
            band = (gap >= 0) & (gap <= self.behind) & (reads.view(-1, 1) >= 0)
            in_step = torch.maximum(in_step, (a * band).amax(dim=1))
        score = view.group(self.in_step_weight * in_step + (1 - self.in_step_weight) * anywhere, "max")
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
