"""Fold-forward cache (board B_offline, one-off reconstruction pass).

The offline pass (the model re-reading its context) says how much each cached token is looked at: its mean
attention over the pass's rows and the group's query heads. The best tokens keep their key and value. A dropped
token's key is thrown away, but its value is folded into the next kept token to its right (the last kept token
for a tail of dropped ones), weighted by the two tokens' mean attention, so what the dropped tokens carried
stays in the values the model still reads. The first four tokens are always kept as they are.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, LayerView, Rewrite


class FoldForward(EvictionMethod):
    name = "fold_forward"
    reconstruction_queries = True
    opening = 4

    def _mean_attention(self, view: LayerView) -> torch.Tensor:
        a = view.attention(view.queries, reduce="mean")                 # non-causal: the pass follows the context
        return view.group(a, "mean")                                    # (H_kv, T)

    def select(self, view: LayerView):
        ok = view.valid_mask()
        if view.queries is None or view.budget >= view.n_tokens:
            w = view.positions.float()
            rank = w.masked_fill(~ok, float("-inf"))
            idx = [rank[h].topk(min(view.budget, int(ok[h].sum()))).indices.sort().values
                   for h in range(view.n_kv_heads)]
            return Rewrite(tuple(view.keys[h, i] for h, i in enumerate(idx)),
                           tuple(view.values[h, i] for h, i in enumerate(idx)),
                           tuple(view.positions[h, i] for h, i in enumerate(idx)))
        att = self._mean_attention(view)
        rank = att.masked_fill(view.positions < self.opening, float("inf")).masked_fill(~ok, float("-inf"))
        keys, values, positions = [], [], []
        for h in range(view.n_kv_heads):
            n = int(ok[h].sum())
            k = min(view.budget, n)
            kept = rank[h].topk(k).indices.sort().values                  # ascending T indices
            if k == 0:
                keys.append(view.keys[h, kept].float())
                values.append(view.values[h, kept].float())
                positions.append(view.positions[h, kept])
                continue
            real = torch.nonzero(ok[h]).flatten()
            # each real token -> the kept slot it folds into: the next kept index at or after it, else the last
            slot = torch.searchsorted(kept, real).clamp(max=k - 1)
            w = att[h, real].clamp_min(1e-8)[:, None]
            v = view.values[h, real].float()
            num = torch.zeros(k, v.shape[-1], device=v.device).index_add_(0, slot, w * v)
            den = torch.zeros(k, 1, device=v.device).index_add_(0, slot, w)
            merged = num / den
            fixed = view.positions[h, kept] < self.opening
            merged[fixed] = view.values[h, kept][fixed].float()
            keys.append(view.keys[h, kept].float())
            values.append(merged)
            positions.append(view.positions[h, kept])
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
