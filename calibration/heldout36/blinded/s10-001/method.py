"""Confident Tally: decode-time accumulated attention in which focused queries count more.

At every cap the decode queries since the previous call add their attention to a per-token tally kept
across calls by position. A query whose attention is spread almost uniformly says little about which
tokens matter, so each query's row is weighted by its confidence, one minus its normalised entropy,
before it is added. The first `sinks` and the newest `recent` tokens are always kept.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class ConfidentTally(EvictionMethod):
    name = "confident_tally"
    query_window = 64
    sinks = 4
    recent = 24

    def select(self, view: LayerView) -> Keep:
        tally = view.recall("tally")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                attn = view.attention(view.queries[:, fresh]) if not bool(fresh.all()) else view.attention()
                visible = (attn > 0).sum(dim=-1).clamp_min(2).float()
                ent = -(attn.clamp_min(1e-12).log() * attn).sum(dim=-1)
                conf = (1 - ent / visible.log()).clamp(0, 1)  # (H_q, N)
                tally = tally + view.group((attn * conf[..., None]).sum(dim=1), "sum")
                view.state["seen"] = int(view.query_positions.max())
        view.remember("tally", tally)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        score = tally.clone()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - self.recent):n] = math.inf
        score = score.masked_fill(view.positions < self.sinks, math.inf)
        return Keep.from_topk(score, view.budget, view.valid)
