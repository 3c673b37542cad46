"""Topic-pool retention (board A, question-aware prefill).

The keys of a KV head are grouped into topic pools by a few rounds of spherical k-means; the question decides which
pools matter (its rows against each pool's centre), and pools are kept in order of relevance until the budget is
spent. Within a pool the tokens closest to the question direction go first.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _spherical_kmeans(x: torch.Tensor, k: int, rounds: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """x (T, D) unit rows -> (centres (k, D), assignment (T,)); deterministic, evenly spaced seeds."""
    seeds = torch.linspace(0, x.shape[0] - 1, k, device=x.device).round().long()
    centres = x[seeds].clone()
    for _ in range(rounds):
        assign = (x @ centres.T).argmax(dim=1)
        summed = torch.zeros_like(centres).index_add_(0, assign, x)
        empty = summed.norm(dim=1) == 0
        summed[empty] = centres[empty]
        centres = F.normalize(summed, dim=1)
    return centres, (x @ centres.T).argmax(dim=1)


class TopicPool(EvictionMethod):
    name = "topic_pool"
    query_window = 8
    question_queries = True
    tokens_per_pool = 16
    min_pools = 4
    anchors = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n_pools = view.budget // self.tokens_per_pool
        if n_pools < self.min_pools:
            # too few pools to be meaningful: anchors plus the closing stretch
            newest = view.positions.amax(dim=-1, keepdim=True)
            order = torch.where(view.positions < self.anchors, newest + 1, view.positions).float()
            return Keep.from_topk(order, view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        scores = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            unit = F.normalize(view.keys[h, idx].float(), dim=-1)
            centres, assign = _spherical_kmeans(unit, min(n_pools, idx.numel()))
            q = view.queries[h * g:(h + 1) * g].reshape(-1, view.keys.shape[-1]).float()  # group's rows
            pool_rel = (q @ centres.T).amax(dim=0)  # (k,) best question row per pool
            qdir = F.normalize(q.mean(dim=0), dim=0)
            within = unit @ qdir  # in [-1, 1]
            scores[h, idx] = pool_rel[assign] * 4.0 + within * 1e-2
            scores[h, idx[view.positions[h, idx] < self.anchors]] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
