"""Tide Line: a heavy-hitter cache whose recent window grows and shrinks with how local the layer is reading.

H2O keeps a fixed half of the budget for the newest tokens and the other half for the largest accumulated attention.
The right split differs by layer and changes along a reasoning trace: some layers mostly look a few tokens back,
others keep returning to the problem statement. At every eviction the layer's newest queries (those since its
previous eviction) measure the share of their attention that fell on the newest ``near`` tokens; a slow running mean
of that share, clamped to [0.15, 0.85], is the recent window's part of the budget. The rest goes to the largest
accumulated attention (H2O's running sums, carried by position), after the first four tokens (StreamingLLM's sinks).
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class TideLine(EvictionMethod):
    name = "tide_line"
    query_window = 64
    n_sink = 4
    near_part = 0.25          # "newest tokens" = this part of the budget
    low, high = 0.15, 0.85
    momentum = 0.7
    start_share = 0.5         # H2O's split before anything is measured

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        totals = view.recall("tide_totals")
        share = float(view.state.get("tide_share", self.start_share))
        counts = valid.sum(dim=1)
        if view.queries is not None and view.query_positions is not None:
            fresh = view.query_positions > view.state.get("tide_seen", -1)
            if bool(fresh.any()):
                window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
                rows = reference_attention(view.queries[:, fresh], view.keys, view.positions,
                                           view.query_positions[fresh], view.model.group_size, view.valid,
                                           scale=view.model.scale, window=window)      # (H_q, n, T)
                per_kv = view.group(rows.sum(dim=1), "sum")
                totals = totals + per_kv
                near = max(1, int(view.budget * self.near_part))
                newest = torch.zeros_like(valid)
                for h in range(view.n_kv_heads):
                    c = int(counts[h])
                    newest[h, max(0, c - near): c] = True
                measured = float(per_kv.masked_fill(~newest, 0).sum() / per_kv.sum().clamp_min(1e-9))
                share = self.momentum * share + (1 - self.momentum) * min(self.high, max(self.low, measured))
                view.state["tide_share"] = share
                view.state["tide_seen"] = int(view.query_positions.max())
        view.remember("tide_totals", totals)

        recent = int(view.budget * share)
        score = totals.clone()
        score[view.positions < self.n_sink] = float("inf")
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
