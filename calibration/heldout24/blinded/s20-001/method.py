"""Locality-sized windows (board C, decode-time).

Builds on StreamingLLM (Xiao et al., 2023, arXiv 2309.17453: opening tokens + a recent window) and H2O (Zhang
et al., 2023, arXiv 2306.14048: accumulated attention). Heads differ in how local they are: some read mostly the
last few dozen tokens, others reach far back. Methods that split heads into "local" and "retrieval" kinds
(DuoAttention, arXiv 2410.10819, with a learned gate; RazorAttention, arXiv 2407.15891, with a retrieval score)
make the split binary and fix it per model. Here the split is continuous and measured at every eviction: each
KV head's recent window is sized by the share of its newest queries' attention that lands in the newest quarter
of its cache, and the rest of its room goes to the tokens with the largest decayed accumulated attention.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class LocalitySizedWindows(EvictionMethod):
    name = "locality_sized_windows"
    query_window = 32
    opening = 4
    decay = 0.9
    window_gain = 0.8          # the window takes at most this share of the room when a head is fully local
    min_window = 8

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        if view.queries is None or view.budget >= int(ok.sum(-1).max()):
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "sum")                  # (H_kv, T)
        acc = view.recall("acc") * self.decay + att
        view.remember("acc", acc)
        out = []
        for h in range(view.n_kv_heads):
            idx = ok[h].nonzero().flatten()
            n = idx.numel()
            b = min(view.budget, n)
            quarter = max(1, n // 4)
            local = float(att[h, idx[n - quarter:]].sum() / att[h, idx].sum().clamp_min(1e-9))
            a = min(self.opening, b)
            room = b - a
            win = int(round(min(max(self.min_window, local * self.window_gain * room), room)))
            rest = room - win
            middle = idx[a:n - win]
            chosen = middle[acc[h, middle].topk(min(rest, middle.numel())).indices] if rest > 0 else middle[:0]
            out.append(torch.cat([idx[:a], chosen, idx[n - win:]]).sort().values)
        return Keep(tuple(out))
