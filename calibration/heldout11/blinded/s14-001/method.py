"""Per-head elastic windows (board B_online): a training-free port of MoA's heterogeneous sliding windows.

MoA (Mixture of Sparse Attention; Fu et al., 2024, arXiv 2406.14909) gives every attention head its own
sliding-window span plus the initial tokens, chosen by profiling how much each head's output depends on each
distance and solving for the spans that lose least under a density budget. We keep that structure and replace the
offline parts by what they estimate, computed on the context itself:

* influence of a span (MoA: gradient-weighted attention on calibration data) -> the share of the attention mass
  of the last 64 context rows (mean over each KV head's query heads) that falls on the initial tokens plus the
  last S tokens;
* the optimiser (MoA: a mixed-integer program over candidate elastic rules) -> a greedy allocation of the layer's
  budget over KV heads in steps of ``step`` tokens, each step going to the head whose covered share rises most.

Every head keeps its ``initial`` tokens and at least ``min_span`` recent ones; heads end up with different lengths
(the layer total never exceeds the budget).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ElasticWindows(EvictionMethod):
    name = "elastic_windows"
    query_window = 64
    initial = 4
    min_span = 16
    step = 8

    def select(self, view: LayerView) -> Keep:
        t, b, h_kv = view.n_tokens, view.budget, view.n_kv_heads
        if b >= t or view.queries is None or view.valid is not None or b < self.initial + self.min_span:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        mass = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        order = torch.argsort(view.positions, dim=1, descending=True)  # newest first
        body = torch.gather(mass, 1, order)[:, : t - self.initial]
        covered = torch.cumsum(body, dim=1)  # mass within the last s tokens, s = 1..T-initial
        total = mass.sum(1).clamp_min(1e-12)
        spans = torch.full((h_kv,), self.min_span, dtype=torch.long)
        room = b * h_kv - h_kv * (self.initial + self.min_span)
        limit = t - self.initial

        def share(h: int, s: int) -> float:
            return float(covered[h, min(s, limit) - 1] / total[h])

        while room > 0:
            gains = []
            for h in range(h_kv):
                s = int(spans[h])
                inc = min(self.step, room, limit - s)
                gains.append((share(h, s + inc) - share(h, s)) / inc if inc > 0 else -1.0)
            best = max(range(h_kv), key=lambda i: gains[i])
            if gains[best] < 0:
                break
            inc = min(self.step, room, limit - int(spans[best]))
            spans[best] += inc
            room -= inc
        out = []
        for h in range(h_kv):
            oldest_first = order[h].flip(0)
            out.append(torch.cat([oldest_first[: self.initial], order[h, : int(spans[h])]]).sort().values)
        return Keep(tuple(out))
