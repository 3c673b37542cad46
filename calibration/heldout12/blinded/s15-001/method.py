"""Quantile-ladder retention (board B_online).

A top-k cut treats a budget as a number of slots to fill. We treat it as a number of *rungs*: each KV head's
tokens are put on a ladder ordered by their significance, the share of the head's read-out they carry
(attention from the closing 48 context rows, summed over the rows and the head's query heads, times the norm
of the token's value), and the cumulative share is cut at evenly spaced heights, one cut per budget slot. A
token is kept when a cut lands on it. Heavy tokens span many rungs and are kept once, so the number kept
adapts to how concentrated the head is: a peaked head keeps fewer entries than its budget and a flat one keeps
nearly all of it. The 48 closing rows are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class QuantileLadder(EvictionMethod):
    name = "quantile_ladder"
    query_window = 48

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        closing = view.positions >= view.query_positions.min()
        rungs = max(1, view.budget - int(closing[0].sum()))
        read = view.group(view.attention(reduce="sum"), "sum")  # (H_kv, T)
        sig = read * view.values.float().norm(dim=-1)
        sig = sig.masked_fill(closing, 0.0)
        sig = sig / sig.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        ladder, order = sig.sort(dim=-1)  # lightest first
        height = ladder.cumsum(dim=-1)
        lo, hi = height[:, :1], height[:, -1:]
        height = (height - lo) / (hi - lo).clamp_min(1e-12)
        cuts = torch.linspace(0, 1, rungs, device=sig.device)
        # the rung nearest to each cut
        hit = (height[:, None, :] - cuts[None, :, None]).abs().argmin(dim=-1)  # (H_kv, rungs)
        out = []
        for h in range(view.n_kv_heads):
            chosen = order[h, hit[h].unique()]
            chosen = torch.cat([chosen, torch.nonzero(closing[h]).flatten()]).unique()
            out.append(chosen.sort().values[: view.budget])
        return Keep(tuple(out))
