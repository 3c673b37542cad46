"""Coverage-proportional head budgets (board B_online): a head whose attention is spread thin needs many tokens to
keep most of what it reads, a focused head needs few. Each KV head gets a share of the layer's budget in
proportion to the number of tokens it needs to cover 90 % of its attention mass, and keeps its best tokens."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _tokens_to_cover(p: torch.Tensor, share: float) -> torch.Tensor:
    """(H, T) non-negative rows -> (H,) the fewest tokens whose mass reaches ``share`` of the row."""
    p = p / p.sum(dim=-1, keepdim=True).clamp_min(1e-12)
    cum = p.sort(dim=-1, descending=True).values.cumsum(dim=-1)
    return (cum < share).sum(dim=-1) + 1


class CoverageBudgets(EvictionMethod):
    name = "coverage_budgets"
    query_window = 32
    share = 0.9
    min_fraction = 0.25     # a head never gets less than this share of the mean budget
    kernel = 7

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        if view.queries is None or view.budget >= int(counts.max()):
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention().sum(dim=1), "mean").masked_fill(~valid, 0.0)   # (H_kv, T)
        need = _tokens_to_cover(attn, self.share).float()
        h = view.n_kv_heads
        total = view.budget * h
        floor = int(self.min_fraction * view.budget)
        quota = (floor + (total - floor * h) * need / need.sum()).floor().long()
        quota = torch.minimum(quota, counts)
        spare = total - int(quota.sum())
        while spare > 0:                       # hand what is left to heads with room, most needy first
            room = (counts - quota) > 0
            if not bool(room.any()):
                break
            for i in need.masked_fill(~room, -1).argsort(descending=True).tolist():
                if spare == 0 or quota[i] >= counts[i]:
                    continue
                quota[i] += 1
                spare -= 1
        score = F.max_pool1d(attn[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, quota, view.valid)
