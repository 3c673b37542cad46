"""Tempered Draw: keep a sample of tokens drawn without replacement in proportion to softmax(log-attention / tau),
via the Gumbel-top-k trick, seeded per layer; sinks and a recent window kept."""

import torch

from harness import EvictionMethod, Keep, LayerView


class TemperedDraw(EvictionMethod):
    name = "tempered_draw"
    query_window = 32
    question_queries = True
    tau = 0.5
    seed = 1234
    n_sink = 4
    recent = 16

    def select(self, view: LayerView) -> Keep:
        h, t = view.keys.shape[:2]
        if view.queries is not None:
            att = view.group(view.attention(reduce="mean"), "mean")
        else:
            att = torch.ones(h, t, device=view.keys.device)
        gen = torch.Generator().manual_seed(self.seed + 7919 * view.layer + t)
        u = torch.rand(h, t, generator=gen).clamp(1e-10, 1 - 1e-10).to(att.device)
        gumbel = -torch.log(-torch.log(u))
        # Gumbel-top-k: argtop-k of log p / tau + G is a draw without replacement from softmax(log p / tau)
        s = att.clamp_min(1e-12).log() / self.tau + gumbel
        s = s.masked_fill(view.positions < self.n_sink, float("inf"))
        n_real = view.valid_mask().sum(dim=1)
        for i in range(h):
            n = int(n_real[i])
            s[i, max(0, n - self.recent):n] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
