"""Return-rhythm keeper (board C): a token that has come back after long silences before is kept through a
silence as long; a token whose silence has outrun its rhythm leaves.

Reasoning traces revisit earlier steps after gaps. For every cached token we keep the step at which it was last
read strongly (attention above the even share 1 / visible tokens, in any query head of its KV head) and the
longest gap it has ever had between two strong reads (its rhythm). At eviction a token's slack is its rhythm minus
its current silence (steps since its last strong read): positive slack means it is due to return. The newest
``guard`` tokens stay, and the rest are ranked by slack; a token that was never read strongly has rhythm 0 and
enters with its own position as its last read, so it is ranked by recency until it is read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from harness import EvictionMethod, Keep, LayerView


@dataclass
class _Rhythm:
    last: torch.Tensor  # (H_kv, T) position of the last strong read
    gap: torch.Tensor  # (H_kv, T) longest gap between strong reads

    def hear(self, strong: torch.Tensor, at: int) -> None:
        """One query row at position ``at``: strong (H_kv, T) marks the tokens it read."""
        gap = (at - self.last).clamp_min(0)
        self.gap = torch.where(strong, torch.maximum(self.gap, gap), self.gap)
        self.last = torch.where(strong, torch.full_like(self.last, float(at)), self.last)


class ReturnRhythm(EvictionMethod):
    name = "return_rhythm"
    query_window = 64
    guard = 8

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        known = view.recall("known") > 0
        rhythm = _Rhythm(last=torch.where(known, view.recall("last"), view.positions.float()),
                         gap=view.recall("gap"))
        heard_until = view.state.get("heard_until", -1)
        now = float(view.positions.max())
        if view.queries is not None and view.query_positions is not None:
            qpos = view.query_positions.to(view.keys.device)
            fresh = torch.nonzero(qpos > heard_until).flatten()
            if fresh.numel():
                attn = view.attention()  # (H_q, N, T), causal
                g = view.model.group_size
                seen = (view.positions[:, None, :] <= qpos[None, :, None]) & valid[:, None, :]  # (H_kv, N, T)
                even = 1.0 / seen.sum(dim=-1).clamp_min(1).float()
                for n in fresh.tolist():
                    row = attn[:, n].reshape(view.n_kv_heads, g, -1).amax(dim=1)
                    rhythm.hear((row > even[:, n, None]) & seen[:, n], int(qpos[n]))
                view.state["heard_until"] = int(qpos.max())
                now = max(now, float(qpos.max()))
        view.remember("last", rhythm.last)
        view.remember("gap", rhythm.gap)
        view.remember("known", torch.ones_like(rhythm.gap))
        slack = rhythm.gap - (now - rhythm.last)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            slack[h, max(0, c - self.guard): c] = float("inf")
        return Keep.from_topk(slack.masked_fill(~valid, float("-inf")), view.budget, view.valid)
