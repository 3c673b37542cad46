"""Rehearsal channels (board C, decode-time).

Most of a query-key dot product comes from a few channels where both the queries and the keys are large. Rehearsal
channels picks, per KV head and at every eviction, the quarter of the channels that carry the most of the newest
queries' interaction with the keys, rehearses the attention of those queries in that reduced space, and keeps the
entries the rehearsal says they will look at.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class RehearsalChannels(EvictionMethod):
    name = "rehearsal_channels"
    query_window = 32
    share = 0.25
    newest = 4

    def _channels(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Indices of the channels with the largest |q| x |k| mass: q (M, D), k (T, D)."""
        weight = q.abs().sum(0) * k.abs().sum(0)
        n = max(1, int(round(self.share * q.shape[-1])))
        return weight.topk(n).indices

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        score = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        q = view.queries.float()
        d = q.shape[-1]
        for h in range(view.n_kv_heads):
            live = valid[h].nonzero().flatten()
            k = view.keys[h, live].float()
            qh = q[h * g:(h + 1) * g].reshape(-1, d)
            ch = self._channels(qh, k)
            # the reduced dot product stands for the full one: rescale so its spread matches
            partial = qh[:, ch] @ k[:, ch].T * (view.model.scale * (d / ch.numel()) ** 0.5)
            score[h, live] = partial.softmax(-1).sum(0)
        top = view.positions.max(dim=-1, keepdim=True).values
        score = score.masked_fill(view.positions > top - self.newest, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
