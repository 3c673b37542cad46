"""Normalised-attention eviction, ported from ZipCache (board B_online, query-agnostic prefill).

Port of the salient-token metric of ZipCache: Accurate and Efficient KV Cache Quantization with Salient Token
Identification (He et al., 2024, arXiv:2405.14256). ZipCache observes that accumulated attention favours early
tokens (a token at position i is seen by n - i queries) and measures saliency by *normalised* attention: the
attention a token receives, summed over the probe queries that can see it, divided by how many of them can.
To stay cheap it computes this for a small set of probe tokens only: the most recent 5 % of the positions plus
a random 5 % of the rest.

What is ported: exactly that score, per KV head (mean over its query heads), with the paper's probe mix.
What differs: ZipCache keeps every token and quantises the non-salient ones to fewer bits; the harness's
budget counts entries, so here the non-salient tokens are evicted instead of quantised. The random half of
the probe set is drawn from a generator seeded by the layer index, so runs repeat exactly.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class ZipCacheEvictionPort(EvictionMethod):
    name = "zipcache_eviction_port"
    query_window = 1 << 20          # every context query; the probe subset is drawn from them
    recent_share = 0.05
    random_share = 0.05

    def _probe(self, n: int, layer: int, device: torch.device) -> torch.Tensor:
        recent = max(1, int(round(self.recent_share * n)))
        older = n - recent
        g = torch.Generator().manual_seed(7919 * (layer + 1))
        k = min(older, int(round(self.random_share * n)))
        sample = torch.randperm(older, generator=g)[:k] if k > 0 else torch.empty(0, dtype=torch.long)
        rows = torch.cat([sample.sort().values, torch.arange(older, n)])
        return rows.to(device)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rows = self._probe(view.queries.shape[1], view.layer, view.queries.device)
        q = view.queries[:, rows]
        qpos = view.query_positions[rows]
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        received = reference_attention(q, view.keys, view.positions, qpos, view.model.group_size, view.valid,
                                       scale=view.model.scale, window=window, reduce="sum")   # (H_q, T)
        seen_by = (qpos.view(1, 1, -1) >= view.positions.unsqueeze(-1)).sum(dim=-1).clamp_min(1)  # (H_kv, T)
        saliency = view.group(received, "mean") / seen_by.float()
        return Keep.from_topk(saliency, view.budget, view.valid)
