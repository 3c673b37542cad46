"""Rank Drift: decode-time eviction by a running average of attention *ranks* rather than attention mass.

Builds on H2O (accumulated attention received, arXiv 2306.14048), on A2SF's forgetting factor for that
accumulation (arXiv 2407.20485) and on StreamingLLM's sink + recent-window protection (arXiv 2309.17453).
What is new here: every eviction round contributes the percentile rank a token reaches under that round's
queries, not its attention mass, so one round with very peaky attention cannot dominate the history, and a
token's standing is comparable across rounds whatever the number of queries or keys.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RankDrift(EvictionMethod):
    name = "rank_drift"
    query_window = 512          # every decode query since the previous round (block <= 512)
    sinks = 4
    recent = 48
    carry = 0.7                 # weight of the old average rank

    def _fresh_queries(self, view: LayerView) -> torch.Tensor:
        seen = view.state.get("rank_seen", -1)
        fresh = view.query_positions > seen
        if not bool(fresh.any()):
            fresh[-1] = True
        view.state["rank_seen"] = int(view.query_positions.max())
        return view.queries[:, fresh]

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        mass = view.group(view.attention(self._fresh_queries(view), reduce="sum"), "sum")
        mass = mass.masked_fill(~valid, float("-inf"))
        counts = valid.sum(dim=1, keepdim=True).clamp_min(2).float()
        pct = mass.argsort(dim=1).argsort(dim=1).float() - (n - counts)   # padding ranks lowest
        pct = (pct / (counts - 1)).clamp(0.0, 1.0)
        old = view.recall("rank_avg", fill=float("nan"))
        avg = torch.where(torch.isnan(old), pct, self.carry * old + (1.0 - self.carry) * pct)
        view.remember("rank_avg", avg)
        score = avg.clone()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : min(self.sinks, c)] = float("inf")
            score[h, max(0, c - self.recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
