"""ZipCache (He et al., NeurIPS 2024, arXiv 2405.14256): salient tokens by *normalised* attention: the attention a
token receives, summed over a set of probe queries, divided by how many of those probes can see it (the causal
count), which removes the accumulated score's bias toward early tokens. The probes are a cheap sample of the
prompt's queries: the most recent ``recent_probe`` share of them plus a random ``random_probe`` share of the rest
(the paper's hybrid probe strategy, 5 % + 5 %; drawn here from a generator seeded with ``seed``). ZipCache keeps
every token and stores the salient ones at high precision; as an eviction rule the salient tokens are the kept ones:
the top normalised scores per KV head (query heads averaged), with the newest ``n_recent`` tokens always kept (the
kvpress-fork port's recent window; 0 in the paper's prefill). Without queries: recency.
Settings: pa_zipcache; pa_zipcache?random_probe=0.0&recent_probe=0.1; pa_zipcache?n_recent=32; pa_zipcache?recent_probe=0.1&random_probe=0.1
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView, reference_attention


class ZipCache(EvictionMethod):
    name = "pa_zipcache"
    paper: ClassVar[str] = "ZipCache"
    query_window = 1 << 20  # every prompt query: the probes are sampled from them
    recent_probe = 0.05
    random_probe = 0.05
    n_recent = 0
    seed = 0

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n = view.queries.shape[1]
        n_recent_q = min(n, max(1, round(n * self.recent_probe)))
        n_random_q = min(n - n_recent_q, round(n * self.random_probe))
        gen = torch.Generator().manual_seed(self.seed)
        picked = torch.randperm(n - n_recent_q, generator=gen)[:n_random_q].sort().values
        idx = torch.cat([picked, torch.arange(n - n_recent_q, n)]).to(view.queries.device)
        qpos = view.query_positions[idx]
        window = view.model.sliding_window if view.layer in view.model.sliding_layers else None
        acc = reference_attention(view.queries[:, idx], view.keys, view.positions, qpos, view.model.group_size,
                                  view.valid, scale=view.model.scale, window=window, reduce="sum")
        seen = (qpos[None, None, :] >= view.positions[:, :, None]).sum(dim=-1).clamp_min(1)  # (H_kv, T)
        scores = view.group(acc, "mean") / seen
        if self.n_recent > 0:
            last = view.positions.masked_fill(~view.valid_mask(), -1).max(dim=1, keepdim=True).values
            scores = scores.masked_fill(view.positions > last - self.n_recent, float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
