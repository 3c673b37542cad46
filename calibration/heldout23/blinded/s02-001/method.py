"""CHAI-style clustered heads for eviction (board A, question-aware prefill).

A port of CHAI (Agarwal et al., "CHAI: Clustered Head Attention for Efficient LLM Inference", ICML 2024,
arXiv 2403.08058) to the eviction interface. CHAI observes that many attention heads of a layer attend alike,
clusters the query heads of each layer by the correlation of their attention scores, and computes attention only
for one representative head per cluster, reusing it for the members. Here that clustering decides which tokens
a KV head keeps: the layer's query heads are clustered by the correlation of their question-row attention
(k-means on the standardised score vectors, k fixed per layer), each member head is replaced by its cluster's
representative (the member closest to the centroid), and a KV head ranks tokens by the mean of its query heads'
representative attention, max-pooled over 7 neighbours, with the question rows and the first 4 tokens kept.

Deviations from the paper: CHAI picks k per layer offline with an elbow rule on calibration data and saves
compute in the forward pass; this port clusters online on the prompt at hand with k = ceil(heads / 3), and
only uses the clusters to choose the kept tokens (the cache itself is not shared between heads).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def kmeans_rows(x: torch.Tensor, k: int, iters: int = 20) -> torch.Tensor:
    """Cluster the rows of x (N, F) into k groups with Lloyd's algorithm; deterministic farthest-point init."""
    n = x.shape[0]
    k = max(1, min(k, n))
    centres = [x[0]]
    for _ in range(1, k):
        d = torch.cdist(x, torch.stack(centres)).amin(-1)
        centres.append(x[int(d.argmax())])
    c = torch.stack(centres)
    assign = torch.zeros(n, dtype=torch.long, device=x.device)
    for _ in range(iters):
        assign = torch.cdist(x, c).argmin(-1)
        new = torch.stack([x[assign == j].mean(0) if bool((assign == j).any()) else c[j] for j in range(k)])
        if torch.allclose(new, c):
            break
        c = new
    return assign


class ChaiClusteredHeads(EvictionMethod):
    name = "chai_clustered_heads"
    query_window = 8
    question_queries = True
    kernel = 7
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention(reduce="mean")                         # (H_q, T)
        ok_q = view.valid_mask().repeat_interleave(view.model.group_size, 0)
        z = att.masked_fill(~ok_q, 0.0)
        z = (z - z.mean(-1, keepdim=True)) / z.std(-1, keepdim=True).clamp_min(1e-8)
        z = z / math.sqrt(z.shape[-1])                               # rows of unit norm: distance ~ correlation
        k = math.ceil(att.shape[0] / 3)
        assign = kmeans_rows(z, k)
        rep = torch.arange(att.shape[0], device=att.device)
        for j in assign.unique():
            members = (assign == j).nonzero().flatten()
            centre = z[members].mean(0, keepdim=True)
            rep[members] = members[torch.cdist(z[members], centre).flatten().argmin()]
        shared = att[rep]                                            # each head replaced by its representative
        scores = view.group(shared, "mean")
        scores = F.max_pool1d(scores[:, None], self.kernel, 1, self.kernel // 2)[:, 0]
        keep = (view.positions >= int(view.query_positions.min())) | (view.positions < self.n_sink)
        return Keep.from_topk(scores.masked_fill(keep, float("inf")), view.budget, view.valid)
