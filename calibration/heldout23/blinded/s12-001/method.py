"""Anchored / roaming heads (board B_online, query-agnostic prefill).

Each KV head is first sorted into one of two kinds from the closing rows of the context: "anchored" heads,
whose attention is concentrated (low normalised entropy), and "roaming" heads, whose attention is spread over the
context. Anchored heads only need the opening tokens and a recent stretch, so they give part of their slots
away; roaming heads share the freed slots and rank tokens by the closing rows' attention, max-smoothed, with the
closing rows themselves kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class AnchoredRoaming(EvictionMethod):
    name = "anchored_roaming"
    query_window = 32
    sinks = 4
    local = 64             # recent stretch that anchored heads hold on to
    anchor_level = 0.65    # gate threshold
    anchored_keep = 0.5    # share of its slots an anchored head keeps
    pool = 7

    def _gate(self, probs: torch.Tensor, pos: torch.Tensor, qmin: int, g: int) -> torch.Tensor:
        """(H_kv,) True for anchored heads."""
        near = (pos < self.sinks) | (pos >= qmin - self.local)                  # (H_kv, T)
        rows = probs.view(pos.shape[0], -1, pos.shape[1])                       # (H_kv, g R, T)
        share = torch.einsum("hrt,ht->hr", rows, near.float()).mean(-1)
        return share >= self.anchor_level

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        hk, t = view.n_kv_heads, view.n_tokens
        ok = view.valid_mask()
        probs = view.attention()                                                # (H_q, R, T)
        qmin = int(view.query_positions.min())
        anchored = self._gate(probs, view.positions, qmin, g)

        room = ok.sum(-1)
        slots = torch.full((hk,), view.budget, dtype=torch.long, device=ok.device)
        a_slots = int(self.anchored_keep * view.budget)
        n_anch = int(anchored.sum())
        if 0 < n_anch < hk:
            slots[anchored] = a_slots
            freed = (view.budget - a_slots) * n_anch
            roam = (~anchored).nonzero().flatten()
            share, rest = divmod(freed, roam.numel())
            slots[roam] += share
            slots[roam[:rest]] += 1
        slots = torch.minimum(slots, room)

        # anchored heads: opening tokens, then the newest
        ordered = view.positions.float().masked_fill(view.positions < self.sinks, 1e9)
        # roaming heads: smoothed closing-row attention, closing rows kept
        att = probs.sum(1).view(hk, g, t).mean(1)
        att = F.max_pool1d(att[:, None], self.pool, 1, self.pool // 2)[:, 0]
        att = att.masked_fill(view.positions >= qmin, float("inf"))
        score = torch.where(anchored[:, None], ordered, att)
        return Keep.from_topk(score, slots, view.valid)
