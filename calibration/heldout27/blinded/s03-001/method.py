"""Tide marks (board B_online): judge each reach of the context against the reach that follows it.

After the first ``n_sink`` tokens the context is cut into reaches of equal length. A reach is read against the
next one: its keys and values are rescaled by the channel-wise range (minimum to maximum) of the following
reach, and a token whose rescaled key and value vary strongly across channels stands out from what comes after
it (a tide mark). Within each reach the key and value spreads are turned into shares (a softmax over the reach)
and added; every reach keeps the same number of its best tokens. The last full reach and the unfinished one after
it have nothing to be read against, and are kept with the sinks. The reach length follows the budget.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


def _spread(block: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """block (H, R, L, D) against ref (H, R, L, D): the channel spread of block rescaled by ref's range, (H, R, L)."""
    lo, hi = torch.aminmax(ref, dim=2, keepdim=True)
    scaled = (block - lo) / (hi - lo).clamp_min(1e-6)
    return scaled.std(dim=-1)


class TideMarks(EvictionMethod):
    name = "tide_marks"
    n_sink = 4

    def reach_length(self, budget: int) -> int:
        return max(8, min(128, budget // 3))

    def select(self, view: LayerView) -> Keep:
        t, h, d = view.keys.shape[1], view.n_kv_heads, view.keys.shape[2]
        budget = view.budget
        if budget >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), budget, view.valid)
        L = self.reach_length(budget)
        body = t - self.n_sink
        n_reach = body // L
        sinks = torch.arange(min(self.n_sink, t))
        tail_start = self.n_sink + max(0, n_reach - 1) * L
        tail = torch.arange(tail_start, t)
        if n_reach < 2 or sinks.numel() + tail.numel() >= budget:
            newest = torch.arange(max(sinks.numel(), t - (budget - sinks.numel())), t)
            idx = torch.cat([sinks[: budget], newest])[:budget].unique()
            return Keep.same_for_all_heads(idx.to(view.keys.device), h)
        span = slice(self.n_sink, self.n_sink + n_reach * L)
        k = view.keys.float()[:, span].reshape(h, n_reach, L, d)
        v = view.values.float()[:, span].reshape(h, n_reach, L, d)
        judged, ref_k, ref_v = k[:, :-1], k[:, 1:], v[:, 1:]
        score = _spread(judged, ref_k).softmax(dim=-1) + _spread(v[:, :-1], ref_v).softmax(dim=-1)  # (H, R-1, L)
        room = budget - sinks.numel() - tail.numel()
        per = torch.full((n_reach - 1,), room // (n_reach - 1), dtype=torch.long)
        per[(n_reach - 1) - room % (n_reach - 1):] += 1  # the remainder goes to the later reaches
        per = per.clamp(max=L)
        ranks = score.argsort(dim=-1, descending=True).argsort(dim=-1)  # rank of each token inside its reach
        chosen = ranks < per.to(ranks.device)[None, :, None]
        offsets = self.n_sink + torch.arange(n_reach - 1, device=chosen.device)[:, None] * L + torch.arange(L, device=chosen.device)
        out = []
        for i in range(h):
            picked = offsets[chosen[i]]
            out.append(torch.cat([sinks.to(picked.device), picked, tail.to(picked.device)]).sort().values)
        return Keep(tuple(out))
