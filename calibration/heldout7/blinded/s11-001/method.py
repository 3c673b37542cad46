"""Subspace-shared retention (board B_online): heads of a layer that look at the same part of the context are
grouped, each group decides once, and every head of the group keeps what its group decided."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _profiles(view: LayerView) -> torch.Tensor:
    """(H_q, T) one profile per query head over the context."""
    return view.attention(reduce="sum")


def _group_heads(profiles: torch.Tensor, n_groups: int, iters: int = 8) -> torch.Tensor:
    """Deterministic k-means of the centred, unit-normalised profiles (correlation geometry). Returns a group id per
    head; seeds are picked farthest-first from head 0."""
    x = profiles - profiles.mean(dim=-1, keepdim=True)
    x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-9)
    n = x.shape[0]
    k = max(1, min(n_groups, n))
    seeds = [0]
    while len(seeds) < k:
        sim = (x @ x[seeds].T).amax(dim=1)
        sim[seeds] = float("inf")
        seeds.append(int(sim.argmin()))
    centres = x[seeds].clone()
    for _ in range(iters):
        member = (x @ centres.T).argmax(dim=1)
        for c in range(k):
            if bool((member == c).any()):
                centres[c] = F.normalize(x[member == c].mean(dim=0), dim=0)
    return (x @ centres.T).argmax(dim=1), x, centres


class SubspaceSharedRetention(EvictionMethod):
    name = "subspace_shared_retention"
    query_window = 32
    heads_per_group = 3
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        prof = _profiles(view)                                                  # (H_q, T)
        n_groups = max(1, round(prof.shape[0] / self.heads_per_group))
        member, unit, centres = _group_heads(prof, n_groups)
        shared = torch.empty_like(prof)
        for c in member.unique():
            idx = torch.nonzero(member == c).flatten()
            leader = idx[(unit[idx] @ centres[int(c)]).argmax()]
            shared[idx] = prof[leader]                                          # the group decides once
        per_kv = view.group(shared, "mean")
        per_kv = F.avg_pool1d(per_kv[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                              count_include_pad=False)[:, 0]
        closing = view.positions >= int(view.query_positions.min())
        return Keep.from_topk(per_kv.masked_fill(closing, float("inf")), view.budget, view.valid)
