"""Draw by significance: how much attention a token receives times how long its value is says how much it would
move the output; the cache is filled by drawing tokens in proportion to that, so the weak tail still gets seats."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class DrawBySignificance(EvictionMethod):
    name = "draw_by_significance"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        got = view.group(view.attention(reduce="mean"), "mean")
        weight = got * view.values.float().norm(dim=-1)
        prob = weight / weight.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        gen = torch.Generator().manual_seed(1234 + view.layer)
        picks = torch.multinomial(prob, min(view.budget, view.n_tokens), replacement=False, generator=gen)
        return Keep(tuple(p.sort().values for p in picks))
