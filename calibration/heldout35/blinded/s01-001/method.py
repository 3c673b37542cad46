"""Drift Window: a decode-time cache whose recent window widens when the newest queries turn to new material.

At each cap, the queries since the previous call add their attention to a decayed per-token sum (H2O-style,
carried by position). How much of the budget goes to the plain recent window depends on how far the mean of the
newest queries has moved since the previous call: a steady trace leans on the accumulated sums, a trace that
changes subject leans on recency. The first tokens are always kept (StreamingLLM).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class DriftWindow(EvictionMethod):
    name = "drift_window"
    query_window = 64
    sinks = 4
    decay = 0.8
    newest = 16
    low_share, high_share = 0.2, 0.7

    def _drift(self, view: LayerView) -> float:
        cur = view.queries[:, -self.newest:].float().mean(dim=1)
        prev = view.state.get("dw_q")
        view.state["dw_q"] = cur.clone()
        if prev is None or prev.shape != cur.shape:
            return 0.0
        gap = 1.0 - F.cosine_similarity(cur, prev.to(cur.device), dim=-1)
        return float(gap.clamp(0.0, 1.0).mean())

    def select(self, view: LayerView) -> Keep:
        b, valid = view.budget, view.valid_mask()
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        seen = view.state.get("dw_seen", -1)
        fresh = view.query_positions > seen
        acc = view.recall("dw_acc") * self.decay
        if bool(fresh.any()):
            q = view.queries[:, fresh]
            part = torch.zeros_like(acc)
            qp = view.query_positions[fresh]
            a = view.attention(q)  # (H_q, n, T)
            a = a * (view.positions[:, None, :].repeat_interleave(view.model.group_size, 0) <= qp[None, :, None])
            part = view.group(a.sum(dim=1), "sum")
            acc = acc + part
            view.state["dw_seen"] = int(view.query_positions.max())
        view.remember("dw_acc", acc)
        drift = min(1.0, 4.0 * self._drift(view))
        share = self.low_share + (self.high_share - self.low_share) * drift
        recent = int(b * share)
        scores = acc.clone()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent):n] = float("inf")
            scores[h, : min(self.sinks, n)] = float("inf")
        return Keep.from_topk(scores, b, view.valid)
