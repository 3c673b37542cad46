"""Return-interval keep (board C, decode-time cap).

In a reasoning trace, many tokens are read, ignored for a while, then read again. For every cached token the
method records, from every decoding step it sees, whether that step "hit" the token (attention above the step's
uniform level, 1 / tokens visible), the step of its latest hit and the longest gap it has ever shown between two
hits. A token whose current silence is still within its longest gap is expected to come back and is kept first
(the tighter the fit, the better); tokens whose silence has outrun every gap they ever showed, and tokens never
hit, go first. The newest 16 tokens and the opening 4 always stay.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class ReturnInterval(EvictionMethod):
    name = "return_interval"
    query_window = 512
    recent = 16
    opening = 4

    def _observe(self, view: LayerView):
        last = view.recall("ri_last", fill=-1.0)
        gap = view.recall("ri_gap", fill=0.0)
        if view.queries is None:
            return last, gap
        seen = view.state.get("ri_seen", -1)
        qpos = view.query_positions
        fresh = (qpos > seen).nonzero().flatten()
        g = view.model.group_size
        ok = view.valid_mask()
        for start in range(0, fresh.numel(), 64):
            rows = fresh[start:start + 64]
            q = view.queries[:, rows]
            rpos = qpos[rows].to(view.positions.device)
            a = view.attention(q)                                            # (H_q, r, T), not causal
            vis = (view.positions[:, None, :] <= rpos[None, :, None]) & ok[:, None, :]   # (H_kv, r, T)
            a = a * vis.repeat_interleave(g, 0)
            a = a.view(view.n_kv_heads, g, rows.numel(), -1).mean(1)        # (H_kv, r, T)
            level = 1.0 / vis.sum(-1, keepdim=True).clamp_min(1)
            hit = (a > level) & vis
            for i in range(rows.numel()):                                   # steps in order
                step = float(rpos[i])
                h_i = hit[:, i]
                had = last >= 0
                gap = torch.where(h_i & had, torch.maximum(gap, step - last), gap)
                last = torch.where(h_i, torch.full_like(last, step), last)
        if fresh.numel():
            view.state["ri_seen"] = int(qpos.max())
        return last, gap

    def select(self, view: LayerView) -> Keep:
        last, gap = self._observe(view)
        view.remember("ri_last", last)
        view.remember("ri_gap", gap)
        ok = view.valid_mask()
        now = float(view.query_positions.max()) if view.query_positions is not None else float(view.positions.max())
        silence = now - last
        expected = (last >= 0) & (silence <= gap)
        fit = 1.0 - silence / gap.clamp_min(1.0)
        score = torch.where(expected, 2.0 + fit, torch.where(last >= 0, 1.0 / (1.0 + silence), torch.zeros_like(last)))
        counts = ok.sum(-1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.recent):c] = float("inf")
        score = score.masked_fill(view.positions < self.opening, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
