"""Value-surprise weighting (board B_online).

SnapKV's window score (attention of the last context rows) tells how much a token is read, not whether reading it
tells the model anything its neighbours would not. Neighbouring tokens often carry near-identical values (the
middle of a word, filler), and dropping one of them costs little because its neighbour answers for it. We weight
the window score by a local value surprise: how far a token's value lies from the mean value of its +-2 neighbours,
relative to the layer's median surprise.

    score = pooled window attention x (1 + beta * surprise / median(surprise))

The window rows and four opening tokens are always kept. Builds on SnapKV (Li et al., 2024, arXiv 2404.14469):
window scoring and pooling are theirs; the value-aware weighting is in the spirit of VATP (Guo et al., 2024,
arXiv 2406.12335), which multiplies by the value norm, where we use the local surprise instead.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class ValueSurprise(EvictionMethod):
    name = "value_surprise"
    query_window = 32
    beta = 0.5
    reach = 2
    opening = 4

    def _surprise(self, values: torch.Tensor) -> torch.Tensor:
        v = values.float()  # (H, T, D)
        h, t, d = v.shape
        width = 2 * self.reach + 1
        total = F.avg_pool1d(v.transpose(1, 2).reshape(h * d, 1, t), width, stride=1, padding=self.reach,
                             count_include_pad=False).reshape(h, d, t).transpose(1, 2)
        ones = torch.ones(1, 1, t, device=v.device)
        count = F.conv1d(ones, torch.ones(1, 1, width, device=v.device), padding=self.reach)  # in-range tokens
        count = count.view(1, t, 1)
        neighbours = (total * count - v) / (count - 1).clamp_min(1)
        s = (v - neighbours).norm(dim=-1)
        return s / s.median(dim=1, keepdim=True).values.clamp_min(1e-6)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.max_pool1d(att[:, None], 7, stride=1, padding=3)[:, 0]
        score = att * (1 + self.beta * self._surprise(view.values))
        fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.opening)
        score = torch.where(fixed, 1e9 + view.positions.float(), score)  # newest first if they alone fill the budget
        return Keep.from_topk(score, view.budget, view.valid)
