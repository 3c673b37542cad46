"""Far demand (board B_offline): rate each context token by the attention it gets from re-reading rows that are
not busy copying it.

KVzip's re-reading pass (the model repeats the context after a "repeat" instruction) scores each token by the
largest attention any repeat row pays it. Much of that maximum comes from the row that is copying the token (or
its neighbour) at that moment: every token wins it, including ones nothing else needs. Here the repeat row that
copies context token j is located (the pass's rows are the instruction's tokens followed by the context, so row
j + (rows - context length) copies token j), and a token's score is its largest attention from rows whose copy
position lies more than ``band`` tokens away from it: attention that is demand from elsewhere in the text. The
maximum runs over the query heads of the KV head. The first ``n_sink`` tokens and the newest ``n_new`` are kept.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416), whose pass and max-over-rows scoring this uses; the
exclusion of the copying band is ours, and we have not seen it in other work. StreamingLLM (Xiao et al., 2023,
arXiv 2309.17453) for the sinks.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class FarDemand(EvictionMethod):
    name = "far_demand"
    reconstruction_queries = True
    band = 16
    n_sink = 4
    n_new = 8
    rows_at_once = 96

    def demand(self, view: LayerView) -> torch.Tensor:
        assert view.queries is not None
        h, t = view.n_kv_heads, view.n_tokens
        n = view.queries.shape[1]
        lead = max(0, n - t)  # the instruction's rows before the copy starts
        slot = torch.arange(t, dtype=torch.float32, device=view.keys.device)  # token j's place in the context
        best = torch.zeros(h, t, device=view.keys.device)
        for start in range(0, n, self.rows_at_once):
            rows = torch.arange(start, min(n, start + self.rows_at_once), device=view.keys.device)
            attn = view.attention(view.queries[:, rows])  # (H_q, c, T), the pass sits after the context
            copying = (rows - lead).float()  # the context slot each row copies (negative: the instruction)
            near = (copying[:, None] - slot[None, :]).abs() <= self.band
            near &= (copying >= 0)[:, None]
            far = attn.masked_fill(near[None], 0.0).amax(dim=1)  # (H_q, T)
            best = torch.maximum(best, view.group(far, "max"))
        return best

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.demand(view)
        score[:, : self.n_sink] = float("inf")
        score[:, max(0, t - self.n_new):] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
