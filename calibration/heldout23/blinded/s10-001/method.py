"""Lean-key cache (board A, question-aware prefill).

Two savings in one pass. Tokens: the question rows' attention, max-smoothed over neighbours, ranks the context,
and a recent tail (a fixed share of the context) is always kept. Channels: for each KV head the question rows
and the kept keys meet mostly in a few feature channels; the channels whose query-side and key-side energies
have the smallest product contribute little to any q.k, so they are cleared in the stored keys (the recent tail
keeps all its channels). The answer is a rewrite of the cache: the kept tokens, with slimmer keys.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, LayerView, Rewrite


class LeanKeyCache(EvictionMethod):
    name = "lean_key_cache"
    query_window = 16
    question_queries = True
    tail_share = 0.03        # share of the context kept as the recent tail
    drop_channels = 0.4      # share of key channels cleared outside the tail
    pool = 7

    def _token_rank(self, view: LayerView) -> torch.Tensor:
        att = view.attention(reduce="sum")                           # (H_q, T)
        att = view.group(att, "mean")
        att = F.max_pool1d(att[:, None], self.pool, 1, self.pool // 2)[:, 0]
        t_ctx = int(view.valid_mask().sum(-1).max())
        tail = max(1, math.ceil(self.tail_share * t_ctx))
        newest = view.positions.max(dim=-1, keepdim=True).values
        in_tail = view.positions > newest - tail
        # the tail outranks everything, newest first
        return torch.where(in_tail, 1e6 + view.positions.float(), att), in_tail

    def _channel_mask(self, view: LayerView, h: int, kept_keys: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        q = view.queries[h * g:(h + 1) * g].float().reshape(-1, kept_keys.shape[-1])   # (g R, D)
        energy = q.norm(dim=0) * kept_keys.float().norm(dim=0)                         # (D,)
        n_drop = int(self.drop_channels * energy.numel())
        mask = torch.ones_like(energy, dtype=torch.bool)
        if n_drop:
            mask[energy.argsort()[:n_drop]] = False
        return mask

    def select(self, view: LayerView):
        ok = view.valid_mask()
        if view.queries is None or view.budget >= view.n_tokens:
            score, in_tail = view.positions.float(), torch.zeros_like(ok)
        else:
            score, in_tail = self._token_rank(view)
        score = score.masked_fill(~ok, float("-inf"))
        keys, values, positions = [], [], []
        for h in range(view.n_kv_heads):
            k = min(view.budget, int(ok[h].sum()))
            idx = score[h].topk(k).indices.sort().values
            kk = view.keys[h, idx].float().clone()
            if view.queries is not None and view.budget < view.n_tokens:
                mask = self._channel_mask(view, h, kk)
                slim = ~in_tail[h, idx]
                kk[slim] = kk[slim] * mask.to(kk.dtype)
            keys.append(kk)
            values.append(view.values[h, idx].float())
            positions.append(view.positions[h, idx])
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
