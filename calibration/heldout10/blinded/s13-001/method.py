"""Outlier-key protection for decode-time caps (board C).

Accumulated attention under-rates tokens that have not been needed yet but are unlike anything else in the cache:
a number, a name, a new variable in a reasoning trace. Their keys stand out from the cache's mean key. We keep a
small reserve (a tenth of the budget) for the tokens whose keys are farthest (cosine) from the cache's mean key,
and fill the rest by attention: the newest 32 queries' max attention per token (over queries and the query group),
accumulated across eviction calls. The first 4 tokens and the newest 16 are always kept.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048) / TOVA (Oren et al., 2024, arXiv 2401.06104) for attention
ranking across decode calls, KeyDiff (Park et al., 2025, arXiv 2504.15364) for key dissimilarity to the mean key,
and StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for sinks; the reserve split is ours.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

SINKS = 4
NEWEST = 16
RESERVE = 0.1


class OutlierKeyReserve(EvictionMethod):
    name = "outlier_key_reserve"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        att = view.group(view.attention(reduce="max"), "max")              # (H_kv, T)
        acc = view.recall("acc") + att
        view.remember("acc", acc)
        unit = F.normalize(view.keys.float(), dim=-1) * valid[..., None]
        centre = F.normalize(unit.sum(1), dim=-1)                          # (H_kv, D)
        odd = 1.0 - torch.einsum("htd,hd->ht", unit, centre)
        newest = view.positions.masked_fill(~valid, -1).amax(dim=1, keepdim=True)
        fixed = (view.positions < SINKS) | (view.positions > newest - NEWEST)
        n_res = int(RESERVE * view.budget)
        out = []
        for h in range(view.n_kv_heads):
            chosen = fixed[h] & valid[h]
            if n_res > 0:
                o = odd[h].masked_fill(~valid[h] | chosen, float("-inf"))
                chosen[o.topk(min(n_res, int((o > float("-inf")).sum()))).indices] = True
            room = view.budget - int(chosen.sum())
            a = acc[h].masked_fill(~valid[h] | chosen, float("-inf"))
            if room > 0:
                chosen[a.topk(min(room, int((a > float("-inf")).sum()))).indices] = True
            idx = chosen.nonzero().flatten()
            out.append(idx[-view.budget:] if idx.numel() > view.budget else idx)
        return Keep(tuple(out))
