"""Nearest-probe retention (board C, decode-time).

A reasoning trace keeps asking the cache the same few questions. Nearest-probe retention treats each of the
newest 32 queries as a search: it fetches the keys with the largest raw inner product with that query (its
nearest keys, no softmax), an eighth of the budget per query and query head. A cached token's worth is the
number of searches that fetched it, ties broken by its best inner product. A fixed frame is kept outright:
the first 4 tokens and the newest quarter of the budget; the rest of the budget goes to the most fetched
tokens.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


class NearestProbeRetention(EvictionMethod):
    name = "nearest_probe_retention"
    query_window = 32
    frame_first = 4
    frame_newest = 0.25
    fetch_share = 0.125

    def _fetch_counts(self, view: LayerView, h: int, live: torch.Tensor, per_search: int) -> torch.Tensor:
        g = view.model.group_size
        probes = view.queries[h * g:(h + 1) * g].reshape(-1, view.queries.shape[-1]).float()   # (g*N, D)
        ip = probes @ view.keys[h, live].float().T                                            # (g*N, n)
        fetched = ip.topk(min(per_search, live.numel()), dim=-1).indices.flatten()
        counts = torch.bincount(fetched, minlength=live.numel()).float()
        best = ip.amax(dim=0)
        return counts + 1e-3 * torch.sigmoid(best)

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            n = live.numel()
            want = min(view.budget, n)
            if view.queries is None or want >= n:
                worth = view.positions[h, live].float()
            else:
                worth = self._fetch_counts(view, h, live, max(1, int(want * self.fetch_share)))
                worth[max(0, n - int(want * self.frame_newest)):] = float("inf")
                worth[: min(self.frame_first, want)] = float("inf")
            out.append(live[worth.topk(want).indices].sort().values)
        return Keep(tuple(out))
