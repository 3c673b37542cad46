"""Span-tiling retention (board B_online): the context is tiled into short spans; the closing context queries
rank the spans by the attention they collect, whole spans are kept, and neighbouring layers share one tiling
decision so that a span survives or goes together through a block of layers."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SpanTiling(EvictionMethod):
    name = "span_tiling"
    query_window = 32
    span = 8              # tokens per span
    layers_per_group = 4  # layers that share one decision
    n_anchor = 4
    tail_floor = 96       # the recency tail keeps at least this many tokens
    tail_share = 0.5      # ... or this share of the budget, whichever is larger

    def setup(self, model) -> None:
        self._shared: dict = {}

    def _decide(self, view: LayerView, h: int, idx: torch.Tensor, b: int, mass) -> torch.Tensor:
        pos = view.positions[h, idx]
        n = idx.numel()
        tail = min(n, max(self.tail_floor, int(b * self.tail_share)), b)
        keep = torch.zeros(n, dtype=torch.bool, device=idx.device)
        keep[n - tail:] = True
        keep[: min(self.n_anchor, b - tail) if b > tail else 0] = True
        room = b - int(keep.sum())
        n_spans = room // self.span
        if n_spans > 0 and view.queries is not None:
            attn = mass()[h, idx]                                                      # (n,)
            body = (~keep).nonzero().flatten()
            starts = body[:: self.span]
            span_mass = torch.stack([attn[s: s + self.span][~keep[s: s + self.span]].sum() for s in starts])
            for s in starts[span_mass.topk(min(n_spans, starts.numel())).indices]:
                seg = torch.arange(int(s), min(int(s) + self.span, n), device=idx.device)
                keep[seg] = True
        chosen = keep.nonzero().flatten()[:b]
        return pos[chosen]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        shared = getattr(self, "_shared", None)
        if shared is None:
            self._shared = shared = {}
        valid = view.valid_mask()
        group = view.layer // self.layers_per_group
        cache = {}

        def mass() -> torch.Tensor:
            if "m" not in cache:
                cache["m"] = view.group(view.attention().sum(dim=1), "sum")          # (H_kv, T)
            return cache["m"]

        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            b = min(view.budget, idx.numel())
            key = (group, h, idx.numel(), int(view.positions[h, idx[-1]]), b)
            pos = shared.get(key) if view.layer % self.layers_per_group else None
            if pos is None:
                pos = self._decide(view, h, idx, b, mass)
                shared[key] = pos
            where = torch.searchsorted(view.positions[h, idx], pos.to(view.positions.device))
            where = where.clamp(max=idx.numel() - 1)
            hit = view.positions[h, idx[where]] == pos
            out.append(idx[where[hit]].sort().values)
        return Keep(tuple(out))
