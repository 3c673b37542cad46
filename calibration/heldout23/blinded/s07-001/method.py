"""Two-clock attention memory (board C, decode-time cap).

H2O (Zhang et al., 2023, arXiv 2306.14048) sums every step's attention forever, which favours old tokens; A2SF
(Jo et al., 2024, arXiv 2407.20485) multiplies the running sum by one forgetting factor per step, which trades
that bias for forgetting tokens that matter again much later. This method keeps two running memories per token
instead of one, a fast one (factor 0.8 per step: what the current stretch of reasoning reads) and a slow one
(factor 0.995: what the trace keeps returning to), each normalised by its mean over the cached tokens, and scores
a token by the larger of the two: a token survives if either clock says it matters. Every query since the last
call is folded in, step by step; the newest 16 tokens are kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class TwoClockMemory(EvictionMethod):
    name = "two_clock_memory"
    query_window = 512
    fast = 0.8
    slow = 0.995
    recent = 16
    rows = 64

    def _fold(self, view: LayerView):
        mem_f = view.recall("tc_fast")
        mem_s = view.recall("tc_slow")
        if view.queries is None:
            return mem_f, mem_s
        qpos = view.query_positions
        fresh = (qpos > view.state.get("tc_seen", -1)).nonzero().flatten()
        g = view.model.group_size
        ok = view.valid_mask()
        for s in range(0, fresh.numel(), self.rows):
            sel = fresh[s:s + self.rows]
            rpos = qpos[sel].to(view.positions.device)
            a = view.attention(view.queries[:, sel])                         # (H_q, r, T)
            vis = (view.positions[:, None, :] <= rpos[None, :, None]) & ok[:, None, :]
            a = (a * vis.repeat_interleave(g, 0)).view(view.n_kv_heads, g, sel.numel(), -1).mean(1)
            r = sel.numel()
            age = torch.arange(r - 1, -1, -1, device=a.device, dtype=torch.float32)   # steps after each row
            mem_f = mem_f * self.fast ** r + torch.einsum("r,hrt->ht", self.fast ** age, a)
            mem_s = mem_s * self.slow ** r + torch.einsum("r,hrt->ht", self.slow ** age, a)
        if fresh.numel():
            view.state["tc_seen"] = int(qpos.max())
        return mem_f, mem_s

    def select(self, view: LayerView) -> Keep:
        mem_f, mem_s = self._fold(view)
        view.remember("tc_fast", mem_f)
        view.remember("tc_slow", mem_s)
        ok = view.valid_mask().float()
        norm = lambda m: m / ((m * ok).sum(-1, keepdim=True) / ok.sum(-1, keepdim=True).clamp_min(1)).clamp_min(1e-12)
        score = torch.maximum(norm(mem_f), norm(mem_s))
        counts = ok.sum(-1).long()
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.recent):c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
