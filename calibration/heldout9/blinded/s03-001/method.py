"""Tempo classes (board C).

While a model reasons, the shape of its attention changes with what it is doing: when it works something out its
queries spread over many earlier tokens; when it executes a routine step they settle on a handful; when it pivots
("so", "next", formatting) they collapse onto one or two. We read that tempo off every decoded query and use it to
decide what can go first.

Each new query gets a focus value (the attention mass of its 8 strongest keys, averaged over query heads) and, from
it, a tempo class: broad (< 0.45), steady (< 0.75) or pivot. Classes are smoothed over spans of 16 consecutive
positions (majority vote), stored with the token, and carried across evictions. When a layer is full, pivot spans
go first, then steady ones, then broad ones; inside a class the token with the least attention received so far
(summed over every query since the layer was last asked) goes first. The first 4 tokens and the newest 8 stay.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


def _mode_by_span(labels: torch.Tensor, positions: torch.Tensor, span: int) -> torch.Tensor:
    out = labels.clone()
    spans = torch.div(positions, span, rounding_mode="floor")
    for s in spans.unique().tolist():
        m = spans == s
        out[m] = torch.mode(labels[m]).values
    return out


class TempoClasses(EvictionMethod):
    name = "tempo_classes"
    query_window = 128
    strongest = 8
    broad_below = 0.45
    steady_below = 0.75
    span = 16
    n_sink = 4
    newest = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        pos = view.positions
        tempo = view.recall("tempo", fill=0.0)
        heard = view.recall("heard")
        last = view.state.get("last_q", -1)
        qpos = view.query_positions.to(pos.device)
        new = qpos > last
        if bool(new.any()):
            q, qp = view.queries[:, new], qpos[new]
            rows = reference_attention(q, view.keys, pos, qp, view.model.group_size, view.valid,
                                       scale=view.model.scale)                       # (H_q, n, T)
            k = min(self.strongest, rows.shape[-1])
            focus = rows.topk(k, dim=-1).values.sum(-1).mean(0)                      # (n,)
            cls = torch.full_like(focus, 2.0)
            cls[focus < self.steady_below] = 1.0
            cls[focus < self.broad_below] = 0.0
            cls = _mode_by_span(cls, qp, self.span)
            heard = heard + view.group(rows.sum(dim=1), "sum")
            for h in range(view.n_kv_heads):
                at = torch.searchsorted(qp, pos[h]).clamp(max=qp.numel() - 1)
                hit = (qp[at] == pos[h]) & valid[h]
                tempo[h][hit] = cls[at[hit]]
            view.state["last_q"] = int(qpos.max())
        view.remember("tempo", tempo)
        view.remember("heard", heard)

        rank = heard / heard.amax(dim=1, keepdim=True).clamp_min(1e-9)
        age = (pos - pos.amin(dim=1, keepdim=True)).float()
        age = age / age.amax(dim=1, keepdim=True).clamp_min(1.0)
        score = (2.0 - tempo) * 10.0 + 0.8 * rank + 0.2 * age
        counts = valid.sum(dim=1)
        score = score.masked_fill(pos < self.n_sink, float("inf"))
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
