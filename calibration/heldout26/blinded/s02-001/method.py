"""Wake retention (board A, query-aware prefill).

Question attention finds where an answer is anchored, but in retrieval prompts the anchor is usually the key
("the special magic number for ... is") and the payload comes right after it. Symmetric pooling (SnapKV) spends
half of its smoothing on tokens before the anchor. Wake retention ranks tokens by the question's attention
(SnapKV's signal, no pooling), keeps the strongest anchors, and spends a fixed share of the budget on each
anchor's *wake*: the few tokens that follow it, best anchors' wakes first. The opening tokens are kept.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import EvictionMethod, Keep, LayerView


class WakeRetention(EvictionMethod):
    name = "wake_retention"
    query_window = 16
    question_queries = True
    wake = 3              # tokens after an anchor that count as its wake
    wake_share = 0.3      # budget share reserved for wakes
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = view.group(view.attention(reduce="sum"), "max").cpu().numpy()        # (H_kv, T)
        valid = view.valid_mask().cpu().numpy()
        out = []
        for h in range(view.n_kv_heads):
            live = np.flatnonzero(valid[h])
            want = min(view.budget, live.size)
            s = scores[h, live]
            keep = np.zeros(live.size, dtype=bool)
            keep[: min(self.opening, want // 4)] = True
            n_wake = int(want * self.wake_share)
            n_anchor = max(1, want - int(keep.sum()) - n_wake)
            ranked = np.argsort(-s, kind="stable")
            anchors = []
            for i in ranked:
                if len(anchors) >= n_anchor:
                    break
                if not keep[i]:
                    keep[i] = True
                    anchors.append(i)
            # wakes: best anchors first, nearest follower first
            for step in range(1, self.wake + 1):
                for a in anchors:
                    if keep.sum() >= want:
                        break
                    j = a + step
                    if j < live.size and not keep[j]:
                        keep[j] = True
            for i in ranked:                     # budget left over (wakes overlapping): next best tokens
                if keep.sum() >= want:
                    break
                keep[i] = True
            out.append(torch.as_tensor(live[keep], dtype=torch.long, device=view.keys.device))
        return Keep(tuple(out))
