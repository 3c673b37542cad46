"""Tempered log-attention scores for decode-time eviction (board C)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class TemperedKeys(EvictionMethod):
    name = "tempered_keys"
    query_window = 24
    tau = 0.7
    n_recent = 12
    eps = 1e-6

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="sum")                       # (H_q, T)
        logp = torch.log(attn + self.eps)
        scores = view.group(logp / self.tau, "mean")              # (H_kv, T)
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        recent = min(self.n_recent, view.budget // 2)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent): n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
