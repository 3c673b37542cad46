"""Leaky Hitters: heavy-hitter scores that forget, plus a protected recent window (decode-time)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class LeakyHitters(EvictionMethod):
    name = "leaky_hitters"
    query_window = 512
    gamma = 0.98          # per-query retention of the running score
    recent_share = 0.125  # of the budget, always kept

    def _decayed_sum(self, view: LayerView, fresh: torch.Tensor) -> tuple[torch.Tensor, int]:
        q = view.queries[:, fresh]
        n = q.shape[1]
        attn = view.attention(q) if not bool(fresh.all()) else view.attention()  # (H_q, n, T)
        if not bool(fresh.all()):  # causal masking by hand for a subset of the queries
            qpos = view.query_positions[fresh]
            mask = view.positions.repeat_interleave(view.model.group_size, 0)[:, None, :] > qpos[None, :, None]
            attn = attn.masked_fill(mask, 0.0)
        # newest query weighs 1, the one before it gamma, ... : sum_i gamma^(n-1-i) a_i
        w = self.gamma ** torch.arange(n - 1, -1, -1, device=attn.device, dtype=torch.float32)
        return view.group(torch.einsum("n,hnt->ht", w, attn), "sum"), n

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("leaky")
        if view.queries is not None:
            seen = view.state.get("leaky_seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                new, n = self._decayed_sum(view, fresh)
                acc = acc * (self.gamma ** n) + new  # old mass fades by gamma per new query
                view.state["leaky_seen"] = int(view.query_positions.max())
        view.remember("leaky", acc)
        scores = acc.clone()
        counts = view.valid_mask().sum(dim=1)
        recent = max(1, int(view.budget * self.recent_share))
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            scores[h, max(0, c - recent):c] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
