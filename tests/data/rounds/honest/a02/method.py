"""Log-distance bucket quotas over question attention (board A).

Tokens are bucketed by log2 of their distance from the end of the prompt. Each bucket receives a share of the
budget proportional to the square root of the question attention mass it holds (largest-remainder rounding,
capped at the bucket's size), and keeps its best tokens; whatever is left goes to the best remaining tokens.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class LogBucketQuota(EvictionMethod):
    name = "log_bucket_quota"
    query_window = 8
    question_queries = True
    mass_power = 0.5

    def _quotas(self, mass: torch.Tensor, sizes: torch.Tensor, budget: int) -> torch.Tensor:
        share = mass.clamp_min(0).pow(self.mass_power)
        share = share * (sizes > 0)
        if float(share.sum()) <= 0:
            share = sizes.float()
        raw = share / share.sum() * budget
        quota = torch.minimum(raw.floor().long(), sizes)
        left = budget - int(quota.sum())
        if left > 0:
            frac = (raw - raw.floor()).masked_fill(quota >= sizes, -1.0)
            for b in frac.argsort(descending=True)[:left].tolist():
                if quota[b] < sizes[b]:
                    quota[b] += 1
        return quota

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = view.group(view.attention(reduce="mean"), "max")  # (H_kv, T)
        valid = view.valid_mask()
        end = int(view.positions.max())
        n_b = max(1, math.ceil(math.log2(end + 2)))
        edges = torch.pow(2.0, torch.arange(1, n_b + 1, device=score.device))
        kept = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            s = score[h, idx]
            dist = (end - view.positions[h, idx]).float() + 1.0
            bucket = torch.bucketize(dist, edges)  # 0: distance 1, 1: 2-3, 2: 4-7, ...
            sizes = torch.bincount(bucket, minlength=n_b + 1)
            mass = torch.bincount(bucket, weights=s, minlength=n_b + 1)
            budget = min(view.budget, idx.numel())
            quota = self._quotas(mass, sizes, budget)
            chosen = torch.zeros(idx.numel(), dtype=torch.bool, device=score.device)
            for b in torch.nonzero(quota).flatten().tolist():
                members = torch.nonzero(bucket == b).flatten()
                top = s[members].topk(int(quota[b])).indices
                chosen[members[top]] = True
            rest = budget - int(chosen.sum())
            if rest > 0:
                chosen[s.masked_fill(chosen, float("-inf")).topk(rest).indices] = True
            kept.append(idx[chosen])
        return Keep(tuple(kept))
