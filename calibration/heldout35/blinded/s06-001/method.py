"""Rising Interest: window attention with a bonus for tokens the end of the context is turning towards.

Builds on SnapKV (observation-window attention, pooling, the window itself kept). The window is split into its
older and newer halves; a token's score is its mean attention over the whole window plus a bonus for the part
by which the newer half attends to it more than the older half did. The idea is that, without the question,
tokens whose attention is still rising at the end of the context are more likely to be needed next than tokens
that were read once and left behind.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RisingInterest(EvictionMethod):
    name = "rising_interest"
    query_window = 32
    bonus = 0.5
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()                           # (H_q, W, T), causal inside the window
        half = attn.shape[1] // 2
        older, newer = attn[:, :half].mean(dim=1), attn[:, half:].mean(dim=1)
        rise = (newer - older).clamp_min(0.0)
        per_head = 0.5 * (older + newer) + self.bonus * rise
        scores = view.group(per_head, "mean")
        scores = F.avg_pool1d(scores[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                              count_include_pad=False)[:, 0]
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
