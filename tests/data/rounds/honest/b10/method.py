"""Importance first, then spread (board C, decode-time cap).

A window-attention score tends to fill a budget with clusters around a few hot spots and leave long stretches of
the trace with nothing. We keep the first four tokens and the newest 16, give 75 % of the remaining budget to the
most important tokens (mean attention of the newest 16 queries, mean over the KV head's query heads, max-pooled over
3), and fill the last 25 % in four rounds, each taking the tokens with the largest importance x distance (in
positions) to the nearest token already kept. Distances come from running maxima (cummax) forwards and backwards.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the pooled window score (as R-KV, arXiv 2505.24133, also
uses at decode time) and StreamingLLM (Xiao et al., 2023, arXiv 2309.17453) for the sink and recent tokens. The
distance-weighted spread fill is our change, and a small one.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


@dataclass(frozen=True)
class SpreadConfig:
    n_sink: int = 4
    n_recent: int = 16
    core_share: float = 0.75
    rounds: int = 4


def gap_to_kept(pos: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """Distance from each position to the nearest kept position (positions ascending, 1-D)."""
    big = float(pos.max() - pos.min() + 1) if pos.numel() else 1.0
    p = pos.float()
    left = torch.where(kept, p, torch.full_like(p, -1e18)).cummax(dim=0).values
    right = -torch.where(kept, -p, torch.full_like(p, -1e18)).flip(0).cummax(dim=0).values.flip(0)
    d = torch.minimum(p - left, right - p)
    return d.clamp(max=big)


class ImportanceThenSpread(EvictionMethod):
    name = "importance_then_spread"
    query_window = 16
    cfg = SpreadConfig()

    def _importance(self, view: LayerView) -> torch.Tensor:
        imp = view.group(view.attention().mean(dim=1), "mean")
        return F.max_pool1d(imp.unsqueeze(1), 3, stride=1, padding=1).squeeze(1)

    def _head(self, pos: torch.Tensor, imp: torch.Tensor, k: int) -> torch.Tensor:
        n = pos.numel()
        kept = torch.zeros(n, dtype=torch.bool, device=pos.device)
        kept[: min(self.cfg.n_sink, k)] = True
        kept[max(0, n - self.cfg.n_recent):] = True
        if int(kept.sum()) > k:  # a tiny budget: the newest tokens only
            kept[:] = False
            kept[n - k:] = True
            return kept.nonzero().flatten()
        room = k - int(kept.sum())
        core = int(room * self.cfg.core_share)
        if core:
            kept[imp.masked_fill(kept, float("-inf")).topk(core).indices] = True
        left = k - int(kept.sum())
        per_round = -(-left // self.cfg.rounds) if left else 0
        while left > 0:
            take = min(per_round, left)
            score = (imp.clamp_min(1e-9) * gap_to_kept(pos, kept)).masked_fill(kept, float("-inf"))
            kept[score.topk(take).indices] = True
            left -= take
        return kept.nonzero().flatten()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        imp = self._importance(view)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            k = min(view.budget, idx.numel())
            local = self._head(view.positions[h, idx], imp[h, idx], k)
            out.append(idx[local])
        return Keep(tuple(out))
