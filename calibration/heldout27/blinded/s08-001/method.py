"""ZigZagKV's minimum-budget allocation, ported across the KV heads of a layer (board B_online).

Port of ZigZagKV (Zhong, Liu, Zhang, Lei, Gao, Hu, Chen, Zhang: "ZigZagKV: Dynamic KV Cache Compression for
Long-context Modeling based on Layer Uncertainty", COLING 2025, arXiv 2412.09036). ZigZagKV observes that the
smallest budget that keeps a given share of the attention mass differs from layer to layer, uses that minimum
budget as the layer's uncertainty, gives each layer a budget in proportion to it (with a guaranteed minimum),
and then keeps the tokens with the largest cumulative attention from an observation window. The idea is theirs.

Deviation, stated: the harness hands a method one layer at a time, and a layer may not spend another layer's
budget, so the allocation rule is applied one level down, across the KV heads of the layer: each head's minimum
budget is the number of its top tokens that carry ``mass`` (90 %) of the observation window's attention (averaged
over the window rows and the head's query heads); the layer's budget, less the window each head keeps, is shared
in proportion to those minimums, with every head guaranteed ``floor`` x an even share. Inside a head the tokens are
ranked by the window's summed attention, max-pooled over 7 tokens (SnapKV's smoothing), as the paper's selection
step does. On board B the window is the context's closing 32 rows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ZigZagHeads(EvictionMethod):
    name = "zigzag_heads"
    query_window = 32
    mass = 0.9
    floor = 0.5
    kernel = 7

    def minimum_budgets(self, share: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """(H,) number of top tokens per head whose attention reaches ``mass`` of the head's total."""
        share = share.masked_fill(~valid, 0.0)
        ordered = share.sort(dim=1, descending=True).values
        cum = ordered.cumsum(dim=1)
        need = cum < self.mass * cum[:, -1:].clamp_min(1e-12)
        return (need.sum(dim=1) + 1).clamp(max=valid.sum(dim=1))

    def select(self, view: LayerView) -> Keep:
        h, t = view.n_kv_heads, view.n_tokens
        if view.budget >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.attention()  # (H_q, N, T)
        window = (view.positions >= view.query_positions.min()) & valid
        share = view.group(attn.mean(dim=1), "mean").masked_fill(window, 0.0)
        need = self.minimum_budgets(share, valid & ~window).float()

        cumulative = view.group(attn.sum(dim=1), "mean")
        cumulative = F.max_pool1d(cumulative[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        cumulative = cumulative.masked_fill(window, float("inf"))

        total = view.budget * h
        w = window.sum(dim=1).clamp(max=view.budget)
        spare = total - int(w.sum())
        room = (valid & ~window).sum(dim=1)
        even = spare / h
        guaranteed = torch.minimum(torch.full((h,), int(self.floor * even)), room)
        left = spare - int(guaranteed.sum())
        extra = (need / need.sum().clamp_min(1e-12) * left).floor().long()
        per = torch.minimum(guaranteed + extra, room)
        leftover = spare - int(per.sum())
        for i in need.argsort(descending=True).tolist():  # rounding and capped heads: hand the rest on
            if leftover <= 0:
                break
            add = min(leftover, int(room[i] - per[i]))
            per[i] += add
            leftover -= add
        return Keep.from_topk(cumulative, (w + per).to(torch.long), view.valid)
