"""MInference 1.0 (Jiang et al., NeurIPS 2024, arXiv 2407.02490), its vertical-slash pattern read as an eviction
rule: the last 64 queries' attention (causal, 1/sqrt(d)) is summed per key column ("vertical": the first 30
columns forced) and along each diagonal ("slash": the diagonal at offset o holds, for every window query at p, the
key at p - o; the 100 most local diagonals forced), as the official ``vertical_and_slash_kernel`` does; the kept
keys are the top vertical columns plus, for the top diagonals, the key each lands on from the newest query (position
T-1-o: where the official sparse kernel reads that slash). The official per-head sizes (vertical 1000, slash 6096
by default, searched per head offline) become shares of the budget: ``vertical_share`` of it to the columns (by
score, the forced first), the rest to the diagonals, in order. With GQA the group's query heads are summed (the
official kernel runs per query head on repeated keys). Without queries: recency.
Settings: pa_minference; pa_minference?vertical_share=0.5; pa_minference?vertical_share=0.9; pa_minference?query_window=128
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class MInference(EvictionMethod):
    name = "pa_minference"
    paper: ClassVar[str] = "MInference"
    query_window = 64  # last_q
    vertical_share = 1000 / 7096  # the default pattern's vertical 1000 of 1000 + 6096
    n_vertical_forced = 30
    n_slash_forced = 100

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(), "sum")  # (H_kv, w, T), causal
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero()[:, 0]
            pos = view.positions[h, idx]
            a = attn[h][:, idx]  # (w, n) over the head's real tokens
            n = idx.numel()
            k = min(view.budget, n)
            vertical = a.sum(dim=0)
            vertical = vertical.masked_fill(pos < self.n_vertical_forced, float("inf"))
            offsets = view.query_positions[:, None] - pos[None, :]  # (w, n): the diagonal of each entry
            top_pos = int(pos.max())
            slash = torch.zeros(top_pos + 1, device=a.device).index_add_(
                0, offsets.clamp_min(0).flatten(), a.masked_fill(offsets < 0, 0.0).flatten())
            slash[: self.n_slash_forced] = float("inf")
            n_vertical = min(k, round(k * self.vertical_share))
            keep = torch.zeros(n, dtype=torch.bool, device=a.device)
            keep[vertical.topk(n_vertical).indices] = True
            # the diagonals, best first, each landing on the key at (newest position - offset)
            at = {int(p): i for i, p in enumerate(pos.tolist())}
            for o in slash.argsort(descending=True, stable=True).tolist():
                if int(keep.sum()) >= k:
                    break
                i = at.get(top_pos - o)
                if i is not None:
                    keep[i] = True
            if int(keep.sum()) < k:  # too few diagonals landed: the columns fill up
                rest = vertical.masked_fill(keep, float("-inf")).topk(k - int(keep.sum())).indices
                keep[rest] = True
            out.append(idx[keep].sort().values)
        return Keep(tuple(out))
