"""Gumbel-top-k sampling of tokens by attention, for decode-time eviction (board C)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class GumbelSurvival(EvictionMethod):
    name = "gumbel_survival"
    query_window = 32
    tau = 0.5
    n_recent = 8
    n_sink = 4
    seed = 1234

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rounds = view.state.get("rounds", 0)
        view.state["rounds"] = rounds + 1
        attn = view.group(view.attention(reduce="mean"), "mean")          # (H_kv, T)
        logits = torch.log(attn.clamp_min(1e-9)) / self.tau
        g = torch.Generator().manual_seed(self.seed + 7919 * view.layer + 104729 * rounds)
        u = torch.rand(logits.shape, generator=g).clamp(1e-9, 1 - 1e-9).to(logits.device)
        scores = logits - torch.log(-torch.log(u))                         # + Gumbel(0, 1) noise
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        recent = min(self.n_recent, view.budget // 2)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - recent): n] = float("inf")
        scores = scores.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
