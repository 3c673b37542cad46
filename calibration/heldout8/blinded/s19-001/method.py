"""Depth-elastic budgets (board A).

Layers differ in how much they actually change what flows through them. For every attention layer we measure its
*drift*: the cosine between the values of the closing prompt tokens (all KV heads side by side) and the same values
plus the layer's read-out at those tokens; a layer whose read-out barely moves its input has high cosine and is a
cheap place to save memory. The layers' drifts are sorted into three tiers by a one-dimensional 3-means; the tier that
moves least gives up ``release`` (35 %) of its context budget, shared evenly by the other two tiers. Inside a layer
tokens are kept by question attention (question span + last 16 prompt queries, causal, summed, averaged over the KV
head's query heads, average-pooled over 5); the question span is kept.

The harness asks for per-layer budgets before the layers are seen, so the tiers measured at one compression set the
budgets of the next (the first one is uniform).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


def three_means(x: list[float], rounds: int = 50) -> list[int]:
    """Deterministic 1-D 3-means: tier per value, 0 = lowest centre."""
    t = torch.tensor(x, dtype=torch.float64)
    c = torch.quantile(t, torch.tensor([1 / 6, 1 / 2, 5 / 6], dtype=torch.float64))
    for _ in range(rounds):
        lab = (t[:, None] - c[None]).abs().argmin(1)
        new = torch.stack([t[lab == j].mean() if bool((lab == j).any()) else c[j] for j in range(3)])
        if torch.allclose(new, c):
            break
        c = new
    order = torch.argsort(c)
    rank = torch.empty(3, dtype=torch.long)
    rank[order] = torch.arange(3)
    return rank[(t[:, None] - c[None]).abs().argmin(1)].tolist()


class DepthElasticBudgets(EvictionMethod):
    name = "depth_elastic_budgets"
    query_window = 16
    question_queries = True
    release = 0.35
    kernel = 5

    def __init__(self) -> None:
        self._drift: dict[int, float] = {}
        self._tiers: dict[int, int] | None = None

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        layers = model.attention_layers
        if self._tiers is None or set(self._tiers) != set(layers):
            return None
        still = [i for i in layers if self._tiers[i] == 2]          # highest cosine: moves least
        moving = [i for i in layers if self._tiers[i] != 2]
        if not still or not moving:
            return None
        freed = int(self.release * mean_budget) * len(still)
        bonus, extra = divmod(freed, len(moving))
        out = []
        for i in layers:
            b = mean_budget - int(self.release * mean_budget) if i in still else mean_budget + bonus
            out.append(b)
        for j, i in enumerate(moving[:extra]):
            out[layers.index(i)] += 1
        return [max(1, min(n_tokens, b)) for b in out]

    def _measure(self, view: LayerView, rows: torch.Tensor) -> None:
        h_kv, t, d = view.values.shape
        g = view.model.group_size
        v = view.values.float()
        cols = torch.searchsorted(view.positions[0], view.query_positions.to(v.device)).clamp(max=t - 1)
        own = v[:, cols]                                                     # (H_kv, N, D)
        read = torch.einsum("hgnt,htd->hnd", rows.reshape(h_kv, g, -1, t), v) / g
        a = own.permute(1, 0, 2).reshape(len(cols), -1)
        b = (own + read).permute(1, 0, 2).reshape(len(cols), -1)
        self._drift[view.layer] = float(F.cosine_similarity(a, b, dim=-1).mean())
        layers = view.model.attention_layers
        if len(self._drift) == len(layers):
            lab = three_means([self._drift[i] for i in layers])
            self._tiers = dict(zip(layers, lab))
            self._drift = {}

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = view.attention()                                              # (H_q, N, T)
        self._measure(view, rows)
        score = view.group(rows.sum(1), "mean")
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
