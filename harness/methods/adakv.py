"""Ada-KV (Feng et al., 2024, arXiv 2407.11550) over SnapKV scores: the layer's budget is shared across its
KV heads by a top-k over the flattened (head, token) scores, so heads with diffuse attention get more slots;
a safeguard keeps at least ``alpha`` x the mean per-head budget in every head (alpha = 0.2 as in the official
LongBench runs and kvpress). Each head first keeps its observation window plus its top alpha x budget (capped
at an equal share of the layer), then the rest of the layer's budget goes to the best remaining (head, token)
pairs, so the total is exact. Heads end with different lengths, stored ragged."""

import torch

from harness.api import Keep, LayerView
from harness.methods.snapkv import SnapKV


class AdaKV(SnapKV):
    name = "adakv"
    alpha = 0.2
    floor_includes_window = False  # official: window + alpha x budget per head; True = kvpress: max(window, alpha x budget)

    def select(self, view: LayerView) -> Keep:
        scores = self.scores(view)  # the window scores +inf
        h, t = scores.shape
        valid = view.valid_mask()
        scores = scores.masked_fill(~valid, float("-inf"))
        total = min(view.budget * h, int(valid.sum()))
        window = int(torch.isinf(scores[0]).logical_and(scores[0] > 0).sum())
        # every head first gets its window plus the safeguard floor (never more than an equal share) ...
        floor = int(self.alpha * view.budget)
        floor = max(window, floor) if self.floor_includes_window else window + floor
        guaranteed = min(floor, total // h, int(valid.sum(dim=1).min()))
        none = torch.empty(h, 0, dtype=torch.long, device=scores.device)
        forced = scores.topk(guaranteed, dim=-1).indices if guaranteed else none
        rest = scores.scatter(1, forced, float("-inf"))
        # ... then the rest of the layer's budget goes to the best remaining (head, token) pairs
        flat = rest.flatten().topk(total - guaranteed * h).indices
        extra = [flat[flat // t == i] % t for i in range(h)]
        return Keep(tuple(torch.sort(torch.cat([forced[i], extra[i]])).values for i in range(h)))
