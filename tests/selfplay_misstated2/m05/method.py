"""Geometrically forgotten accumulated attention for decode-time eviction."""

import torch

from harness import EvictionMethod, Keep, LayerView


class ForgetfulHitters(EvictionMethod):
    name = "forgetful_hitters"
    query_window = 512
    gamma = 0.97
    n_recent = 8
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("acc")
        if view.queries is not None:
            assert view.query_positions is not None
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                qpos = view.query_positions
                now = int(qpos.max())
                steps = now - seen if seen >= 0 else 0
                acc = acc * (self.gamma ** steps)
                weight = torch.pow(torch.tensor(self.gamma, device=acc.device), (now - qpos).float())
                weight = weight * fresh.float()                       # (N,): queries already counted get 0
                attn = view.attention()                               # (H_q, N, T), causal
                total = torch.einsum("hnt,n->ht", attn, weight)
                acc = acc + view.group(total, "sum")
                view.state["seen"] = now
        view.remember("acc", acc)
        scores = acc.clone()
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        recent = min(self.n_recent, view.budget // 2)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent): n] = float("inf")
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
