"""Hand-over to the newest copy (board C): when generation writes a near-copy of a cached token, the older copy
hands its accumulated attention to the newer one and becomes the first to go.

Reasoning traces restate numbers and phrases. H2O's running totals then keep the old copy (it has had more time to
collect attention) and drop the new one, which sits where the reasoning currently is. Here each token keeps a
running total of the attention it received (summed over the query heads of its KV head, every row since the
previous eviction added once, carried by position). At each eviction, per KV head, every token whose key has a
cosine of at least ``twin`` with a newer token's key passes its total to the newest such twin and keeps none. The
newest ``n_new`` tokens and the first ``n_sink`` stay; the rest are ranked by total.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048) for the running totals and on R-KV (Cai et al., 2025, arXiv
2505.24133), which penalises keys similar to others inside its score; passing the score to the newest copy, so the
total is conserved and the recent copy is kept, is our change, and we have not seen it elsewhere.
StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for the sinks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class HandOver(EvictionMethod):
    name = "hand_over"
    query_window = 64
    twin = 0.8
    n_new = 8
    n_sink = 4

    def hand_over(self, total: torch.Tensor, keys: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        unit = F.normalize(keys.float(), dim=-1)
        t = total.shape[1]
        out = total.clone()
        later = torch.ones(t, t, dtype=torch.bool, device=total.device).triu(diagonal=1)  # [i, j]: j newer than i
        for h in range(total.shape[0]):
            sim = unit[h] @ unit[h].T
            twins = (sim >= self.twin) & later & valid[h][:, None] & valid[h][None, :]
            has = twins.any(dim=1)
            if not bool(has.any()):
                continue
            newest = torch.where(twins, torch.arange(t, device=total.device), -1).amax(dim=1)
            givers = torch.nonzero(has).flatten()
            gifts = out[h, givers].clone()
            out[h, givers] = 0.0
            out[h].index_add_(0, newest[givers], gifts)
        return out

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        total = view.recall("total")
        if view.queries is not None and view.query_positions is not None:
            qpos = view.query_positions
            fresh = qpos > view.state.get("upto", -1)
            if bool(fresh.any()):
                total = total + view.group(view.attention()[:, fresh].sum(dim=1), "sum")
                view.state["upto"] = int(qpos.max())
        total = self.hand_over(total, view.keys, valid)
        view.remember("total", total)
        score = total.masked_fill(~valid, float("-inf")).masked_fill(view.positions < self.n_sink, float("inf"))
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.n_new): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
