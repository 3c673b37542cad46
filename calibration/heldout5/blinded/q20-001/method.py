"""Two-temperature window attention (board B_online).

SnapKV's window attention at the model's own softmax temperature spreads the window's mass over broad, weak
matches; at a sharper temperature it singles out exact matches but loses those broad ones. This method scores
each token with both: the window's attention at the model's scale and at twice that scale (temperature 1/2),
each normalised by its layer-head maximum, and averages the two. Causal masking, GQA averaging, max-pooling over
5 tokens and the kept window are as in SnapKV. A modest variation of SnapKV.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TwoTemperature(EvictionMethod):
    name = "two_temperature"
    query_window = 32
    sharpen = 2.0
    kernel = 5

    def _causal(self, view: LayerView, factor: float) -> torch.Tensor:
        probs = view.attention(view.queries * factor)          # (H_q, W, T), explicit queries: no mask applied
        hide = view.positions.repeat_interleave(view.model.group_size, 0)[:, None, :] > view.query_positions[None, :, None]
        probs = probs.masked_fill(hide, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        return view.group(probs.sum(dim=1), "mean")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        soft = view.group(view.attention(reduce="sum"), "mean")
        sharp = self._causal(view, self.sharpen)
        score = 0.5 * soft / soft.amax(dim=1, keepdim=True).clamp_min(1e-12) \
            + 0.5 * sharp / sharp.amax(dim=1, keepdim=True).clamp_min(1e-12)
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
