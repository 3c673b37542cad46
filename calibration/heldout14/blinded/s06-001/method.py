"""Hole-bridged reconstruction retention (board B_offline).

KVzip's reconstruction score keeps what the model needs to repeat the context. Its top-k is token by token,
though, and the kept set is full of one-token holes: a number kept without its last digit, a name without its
middle piece. We take KVzip's score unchanged and add a repair pass: a dropped token whose two neighbours are both
kept is bridged in, paid for by the weakest kept token that is isolated (both of its neighbours dropped), swapping
only while the bridged token is worth at least half of the isolated one, and at most a tenth of the layer's
share. Four opening tokens are kept.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): the repeat pass and its score (max over the repeat
queries and the query heads of the group) are KVzip's. The hole-bridging swap is ours.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class HoleBridged(EvictionMethod):
    name = "hole_bridged"
    reconstruction_queries = True
    n_open = 4
    swap_share = 0.10
    worth = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        att = view.attention(view.queries, reduce="max")
        score = att.reshape(view.n_kv_heads, g, -1).amax(1)
        score = score.masked_fill(view.positions < min(self.n_open, view.budget // 8), float("inf"))
        base = Keep.from_topk(score, view.budget, view.valid)
        valid = view.valid_mask()
        out = []
        for h, idx in enumerate(base.indices):
            n = int(valid[h].sum())
            kept = torch.zeros(n + 2, dtype=torch.bool)  # one pad slot at each end
            kept[idx + 1] = True
            s = score[h, :n]
            for _ in range(int(self.swap_share * view.budget)):
                mid = kept[1:-1]
                hole = ~mid & kept[:-2] & kept[2:]
                lone = mid & ~kept[:-2] & ~kept[2:] & torch.isfinite(s)
                if not bool(hole.any()) or not bool(lone.any()):
                    break
                hi = torch.where(hole, s, torch.full_like(s, -1.0)).argmax()
                lo = torch.where(lone, s, torch.full_like(s, float("inf"))).argmin()
                if float(s[hi]) < self.worth * float(s[lo]):
                    break
                kept[hi + 1], kept[lo + 1] = True, False
            out.append(kept[1:-1].nonzero().flatten())
        return Keep(tuple(out))
