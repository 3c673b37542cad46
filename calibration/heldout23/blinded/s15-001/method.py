"""Attention momentum (board C, decode-time cap).

TOVA (Oren et al., 2024, arXiv 2401.06104) ranks cached tokens by what the current query attends to, and the
SnapKV family (arXiv 2404.14469) by the mean over a window of recent queries; both look at a level. While a
model reasons, attention to a token often rises or decays over tens of steps. This method fits, for every cached
token, a least-squares line to the attention it received from the newest 32 queries (only the queries that could
see it), and scores it by where the line will be 32 steps ahead, floored at zero, plus a tenth of its mean level
(so a flat, steadily read token is not lost). Tokens being picked up are kept before they peak; tokens fading
out go first. The newest 16 tokens and the first 4 are kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class AttentionMomentum(EvictionMethod):
    name = "attention_momentum"
    query_window = 32
    horizon = 32.0
    level_weight = 0.1
    recent = 16
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        ok = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        a = view.attention()                                                   # (H_q, N, T), causal
        a = a.view(view.n_kv_heads, g, a.shape[1], -1).mean(1)                # (H_kv, N, T)
        qpos = view.query_positions.to(view.positions.device).float()
        seen = (view.positions[:, None, :].float() <= qpos[None, :, None]) & ok[:, None, :]
        w = seen.float()
        n = w.sum(1).clamp_min(1.0)                                            # (H_kv, T)
        x = qpos[None, :, None].expand_as(w)
        x_mean = (w * x).sum(1) / n
        a_mean = (w * a).sum(1) / n
        dx = (x - x_mean[:, None, :]) * w
        var = (dx * dx).sum(1)
        slope = torch.where(var > 0, (dx * (a - a_mean[:, None, :])).sum(1) / var.clamp_min(1e-9),
                            torch.zeros_like(var))
        ahead = float(qpos.max()) + self.horizon
        predicted = (a_mean + slope * (ahead - x_mean)).clamp_min(0.0)
        score = predicted + self.level_weight * a_mean
        counts = ok.sum(-1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.recent):c] = float("inf")
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
