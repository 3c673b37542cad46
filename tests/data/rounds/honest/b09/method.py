"""Hedged TOVA / H2O (board C, decode-time cap).

TOVA keeps what the current query looks at; H2O keeps what all queries so far have looked at. One is myopic, the
other slow to notice a shift. We hedge per KV head: half of the budget (after the newest 8 tokens, always kept)
goes to the tokens the newest query attends to most (TOVA's score, but per KV head: mean over its query heads rather
than over the whole layer), the other half to the largest attention accumulated over every query seen so far (H2O's
sum, carried across calls by position), among the tokens not already chosen.

Builds on TOVA (Oren et al., 2024, arXiv 2401.06104) and H2O (Zhang et al., 2023, arXiv 2306.14048). The hedge,
a fixed split between their two scores, deduplicated, is our change, and a small one. Unlike H2O at prefill, the
accumulated sum starts from the closing 64 prompt queries only.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def accumulate(view: LayerView, attn: torch.Tensor) -> torch.Tensor:
    """Add the attention of the queries not yet counted to the carried per-token sums."""
    acc = view.recall("acc")
    fresh = view.query_positions > view.state.get("upto", -1)
    if bool(fresh.any()):
        acc = acc + view.group(attn[:, fresh].sum(dim=1), "sum")
        view.state["upto"] = int(view.query_positions.max())
    view.remember("acc", acc)
    return acc


class HedgedTovaH2O(EvictionMethod):
    name = "hedged_tova_h2o"
    query_window = 64
    n_recent = 8
    tova_share = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, N, T), causal over the view's own queries
        acc = accumulate(view, attn)
        newest = int(view.query_positions.argmax())
        now = view.group(attn[:, newest], "mean")
        valid = view.valid_mask()
        picks = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            k = min(view.budget, idx.numel())
            recent = idx[max(0, idx.numel() - min(self.n_recent, k)):]
            taken = torch.zeros(view.n_tokens, dtype=torch.bool, device=idx.device)
            taken[recent] = True
            room = k - recent.numel()
            n_tova = room - int(room * (1 - self.tova_share))
            a = now[h].masked_fill(taken | ~valid[h], float("-inf"))
            first = a.topk(n_tova).indices
            taken[first] = True
            b = acc[h].masked_fill(taken | ~valid[h], float("-inf"))
            second = b.topk(room - n_tova).indices
            picks.append(torch.sort(torch.cat([recent, first, second])).values)
        return Keep(tuple(picks))
