"""Few-channel ballot (board B_offline, one-off reconstruction pass).

In each KV head, a handful of feature channels carry most of the query-key product. The offline pass (the model
re-reading its context) gives the queries to find them: per channel, mean |q| over the pass times mean |k| over
the cache; the top eighth of the channels are the head's ballot channels. Every second row of the pass then
casts a ballot: the k tokens with the largest ballot-channel logits (k = the head's budget) get a vote. Tokens are kept by votes, ties broken by their best ballot-channel logit. The first four tokens are kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class FewChannelBallot(EvictionMethod):
    name = "few_channel_ballot"
    reconstruction_queries = True
    channel_share = 0.125
    opening = 4
    rows_per_chunk = 256
    row_stride = 2

    def _channels(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """q (N, D), k (T, D) -> indices of the ballot channels."""
        weight = q.abs().mean(0) * k.abs().mean(0)
        r = max(1, int(round(self.channel_share * weight.numel())))
        return weight.topk(r).indices

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        ok = view.valid_mask()
        hk, t, d = view.keys.shape
        votes = torch.zeros(hk, t, device=view.keys.device)
        best = torch.full((hk, t), float("-inf"), device=view.keys.device)
        for h in range(hk):
            k = view.keys[h].float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, d)[::self.row_stride]
            ch = self._channels(q, k[ok[h]])
            kl = k[:, ch]
            budget = max(1, min(view.budget, int(ok[h].sum())))
            for s in range(0, q.shape[0], self.rows_per_chunk):
                logit = q[s:s + self.rows_per_chunk, ch] @ kl.T                  # (c, T)
                if view.valid is not None:
                    logit = logit.masked_fill(~ok[h][None], float("-inf"))
                picked = logit.topk(budget, dim=-1).indices
                votes[h].scatter_add_(0, picked.reshape(-1), torch.ones(picked.numel(), device=votes.device))
                best[h] = torch.maximum(best[h], logit.amax(0))
        span = (best - best.masked_fill(~ok, float("inf")).amin(-1, keepdim=True)).clamp_min(0)
        score = votes + span / span.amax(-1, keepdim=True).clamp_min(1e-12) * 0.5
        score = score.masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
