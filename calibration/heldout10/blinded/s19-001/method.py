"""Footprint-balanced head roles (board B_online).

Some heads only ever read nearby tokens; giving them a full share of the cache is waste. Per KV head we measure
the cost of making it local: the share of the last 48 context queries' attention that falls outside the first 4
tokens and the most recent L = budget/2 tokens. The half of the heads with the lowest cost become local (4 opening
tokens + the last L tokens); the memory they free goes to the other heads, which keep their best tokens by pooled
window attention. The layer total stays at the budget.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
LOCAL_FRACTION = 0.5


class FootprintRoles(EvictionMethod):
    name = "footprint_roles"
    query_window = 48

    def select(self, view: LayerView) -> Keep:
        t, n_kv, budget = view.n_tokens, view.n_kv_heads, view.budget
        if budget >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), budget, view.valid)
        span = max(1, budget // 2)
        reach = view.group(view.attention(reduce="sum"), "mean")           # (H_kv, T)
        near = torch.zeros(t, dtype=torch.bool, device=reach.device)
        near[:SINKS] = True
        near[t - span:] = True
        cost = reach[:, ~near].sum(-1) / reach.sum(-1).clamp_min(1e-9)      # (H_kv,)
        n_local = int(round(LOCAL_FRACTION * n_kv))
        order = cost.argsort()
        local = set(order[:n_local].tolist())
        local_size = min(t, SINKS + span)
        pool_total = budget * n_kv - local_size * len(local)
        globals_ = [h for h in range(n_kv) if h not in local]
        share = [pool_total // max(1, len(globals_))] * len(globals_)
        for i in range(pool_total - sum(share)):
            share[i % max(1, len(share))] += 1
        pooled = F.avg_pool1d(reach[:, None], 5, stride=1, padding=2)[:, 0]
        pooled[:, t - 16:] = float("inf")
        out = [None] * n_kv
        for h in local:
            out[h] = near.nonzero().flatten()
        for h, k in zip(globals_, share):
            out[h] = pooled[h].topk(min(t, k)).indices.sort().values
        return Keep(tuple(out))
