"""Attention-weighted value coverage (board B_online).

Greedy attention-weighted k-center selection in value space: start from the observation window and 4 sink
tokens, then repeatedly add the tokens with the largest (window attention) x (cosine distance of their value
vector to the closest value already kept). A token is worth keeping when the window attends to it and its
value is not already represented; two copies of the same content share one slot. Picks are added in small
batches (1/64 of what is left to choose) to bound the number of rounds on long contexts.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ValueCoverage(EvictionMethod):
    name = "value_coverage"
    query_window = 32
    sinks = 4
    rounds_div = 64

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(reduce="sum"), "mean")
        attn = F.avg_pool1d(attn[:, None], 5, stride=1, padding=2, count_include_pad=False)[:, 0]
        w0 = int(view.query_positions.min())
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            n = idx.numel()
            if view.budget >= n:
                out.append(idx)
                continue
            pos = view.positions[h, idx]
            seed = (pos >= w0) | (torch.arange(n, device=idx.device) < self.sinks)
            if int(seed.sum()) >= view.budget:
                out.append(idx[seed.nonzero().flatten()[-view.budget:]])
                continue
            v = F.normalize(view.values[h, idx].float(), dim=-1)
            a = attn[h, idx].clamp_min(0)
            chosen = seed.clone()
            nearest = 1 - (v @ v[chosen].T).amax(dim=1)          # cosine distance to the kept set
            left = view.budget - int(chosen.sum())
            while left > 0:
                gain = (a * nearest.clamp_min(0) + 1e-12 * a).masked_fill(chosen, -1.0)
                m = max(1, min(left, left // self.rounds_div))
                pick = gain.topk(m).indices
                chosen[pick] = True
                nearest = torch.minimum(nearest, 1 - (v @ v[pick].T).amax(dim=1))
                left -= m
            out.append(idx[chosen])
        return Keep(tuple(out))
