"""Heavy hitters above chance (board C, decode-time cap).

H2O accumulates, for every cached token, the attention it has received from every query so far. Old tokens gain
simply by having been visible to more queries, and each query's mass is shared among fewer keys early on. We
accumulate instead only the attention each query gives a token above what a uniform query would give it,
max(0, a - 1/n_visible), where n_visible counts the real keys the query can see. Sums are carried across calls by
position (view.remember / recall), fresh queries only; a quarter of the budget holds the most recent tokens, the
rest goes to the largest accumulated excess.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048): heavy hitters plus a recent window, sums carried over decode
steps. A2SF (Jo and Shin, 2024, arXiv 2407.20485) addresses the same age bias with a forgetting factor; we subtract
the uniform expectation per query instead. A small change.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

STATE_KEY = "excess_acc"


class ExcessHeavyHitters(EvictionMethod):
    name = "excess_heavy_hitters"
    query_window = 256
    recent_share = 0.25
    rows = 32

    def _fresh_excess(self, view: LayerView, fresh: torch.Tensor) -> torch.Tensor:
        q_all, qpos_all = view.queries[:, fresh], view.query_positions[fresh]
        valid = view.valid_mask()
        g = view.model.group_size
        out = torch.zeros(view.n_kv_heads, view.n_tokens, device=view.keys.device)
        for start in range(0, q_all.shape[1], self.rows):
            q, qpos = q_all[:, start:start + self.rows], qpos_all[start:start + self.rows]
            seen = (view.positions[:, None, :] <= qpos[None, :, None]) & valid[:, None, :]  # (H_kv, c, T)
            seen_q = seen.repeat_interleave(g, dim=0)
            a = view.attention(q) * seen_q  # causal by hand: the view's causality needs its own queries
            a = a / a.sum(dim=-1, keepdim=True).clamp_min(1e-12)
            chance = seen_q.float() / seen_q.sum(dim=-1, keepdim=True).clamp_min(1)
            out += view.group((a - chance).clamp_min(0.0).sum(dim=1), "sum")
        return out

    def select(self, view: LayerView) -> Keep:
        acc = view.recall(STATE_KEY)
        if view.queries is not None:
            fresh = view.query_positions > view.state.get("seen_upto", -1)
            if bool(fresh.any()):
                acc = acc + self._fresh_excess(view, fresh)
                view.state["seen_upto"] = int(view.query_positions.max())
        view.remember(STATE_KEY, acc)
        valid = view.valid_mask()
        scores = acc.clone()
        n_recent = int(view.budget * self.recent_share)
        for h, n in enumerate(valid.sum(dim=1).tolist()):
            scores[h, max(0, n - n_recent):n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
