"""Key clustering with per-cluster representatives, window attention for the rest (board B_online)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ClusterCover(EvictionMethod):
    name = "cluster_cover"
    query_window = 16
    n_iters = 4
    tokens_per_cluster = 4
    max_clusters = 64

    def _kmeans(self, x: torch.Tensor, k: int) -> torch.Tensor:
        """Spherical k-means (cosine), Lloyd iterations from evenly spaced seeds: (n,) cluster ids."""
        x = F.normalize(x.float(), dim=-1)
        seeds = torch.linspace(0, x.shape[0] - 1, k, device=x.device).round().long()
        centres = x[seeds].clone()
        assign = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
        for _ in range(self.n_iters):
            assign = (x @ centres.T).argmax(dim=1)
            sums = torch.zeros_like(centres).index_add_(0, assign, x)
            empty = sums.norm(dim=-1) == 0
            centres = torch.where(empty[:, None], centres, F.normalize(sums, dim=-1))
        return assign

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "mean")       # (H_kv, T)
        scores = attn.clone()
        k = max(1, min(self.max_clusters, view.budget // self.tokens_per_cluster))
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            if idx.numel() <= k:
                continue
            assign = self._kmeans(view.keys[h, idx], k)
            for c in range(k):
                members = idx[assign == c]
                if members.numel():
                    best = members[attn[h, members].argmax()]
                    scores[h, best] = float("inf")                   # each cluster keeps its best token
        window = view.positions >= view.query_positions.min()
        scores = scores.masked_fill(window, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
