"""Cluster-quota retention (board B_online).

Window attention (SnapKV, Li et al., 2024, arXiv 2404.14469) ranks tokens by what the end of the context reads now; on
board B the questions come later and may ask about any region, and a pure top-k concentrates the budget on the few
regions the window happens to look at. We spread it by *content*: the context keys of each KV head are grouped by
spherical k-means (16 clusters, deterministic initialisation at evenly spaced tokens, 8 rounds), and each cluster
receives a quota of the budget proportional to the square root of the window attention it collects (a cluster the
window ignores still gets a little; a cluster it stares at gets less than its raw share). Inside a cluster tokens are
taken by window attention; quota a cluster cannot use goes to the best remaining tokens overall. The 32-token window
and the first 4 tokens (StreamingLLM, arXiv 2309.17453) are always kept.

Related: ClusterKV (arXiv 2412.03213) also clusters keys, but ranks clusters by query-centroid similarity and keeps
whole clusters for the current query; here clusters only set quotas, and tokens are still chosen one by one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def spherical_kmeans(x: torch.Tensor, k: int, rounds: int) -> torch.Tensor:
    """x (N, D) -> cluster label per row."""
    n = x.shape[0]
    k = max(1, min(k, n))
    u = F.normalize(x.float(), dim=-1)
    cent = u[torch.linspace(0, n - 1, k).round().long()]
    lab = torch.zeros(n, dtype=torch.long, device=x.device)
    for _ in range(rounds):
        lab = (u @ cent.T).argmax(1)
        summed = torch.zeros_like(cent).index_add_(0, lab, u)
        empty = summed.norm(dim=-1) < 1e-9
        cent = torch.where(empty[:, None], cent, F.normalize(summed, dim=-1))
    return lab


class ClusterQuotaRetention(EvictionMethod):
    name = "cluster_quota_retention"
    query_window = 32
    clusters = 16
    rounds = 8
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        heat = view.group(view.attention(reduce="mean"), "mean")           # (H_kv, T)
        valid = view.valid_mask()
        first_q = int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            real = torch.nonzero(valid[h]).flatten()
            pos = view.positions[h, real]
            fixed = (pos < self.n_sink) | (pos >= first_q)
            budget = min(view.budget, real.numel())
            chosen = torch.zeros(real.numel(), dtype=torch.bool, device=real.device)
            chosen[fixed] = True
            room = budget - int(fixed.sum())
            free = torch.nonzero(~fixed).flatten()
            if room > 0 and free.numel():
                lab = spherical_kmeans(view.keys[h, real[free]], self.clusters, self.rounds)
                hv = heat[h, real[free]]
                mass = torch.zeros(int(lab.max()) + 1, device=hv.device).index_add_(0, lab, hv)
                root = mass.clamp_min(0).sqrt()
                quota = torch.floor(root / root.sum().clamp_min(1e-12) * room).long()
                for c in range(quota.numel()):
                    members = torch.nonzero(lab == c).flatten()
                    take = min(int(quota[c]), members.numel())
                    if take:
                        chosen[free[members[hv[members].topk(take).indices]]] = True
                left = budget - int(chosen.sum())
                if left > 0:
                    rest = torch.nonzero(~chosen).flatten()
                    best = heat[h, real[rest]].topk(min(left, rest.numel())).indices
                    chosen[rest[best]] = True
            idx = real[chosen]
            out.append(idx[-budget:] if idx.numel() > budget else idx)
        return Keep(tuple(out))
