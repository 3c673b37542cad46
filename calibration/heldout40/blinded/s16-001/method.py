"""Median Window: window attention smoothed by a median filter before it is spread to neighbours.

SnapKV pools its window-attention scores with a max (or average) filter so that a kept token brings its
neighbours. A max-pool also spreads isolated spikes (a single stray high score drags 6 neighbours in with it),
which on board B, where the window is the context's own tail rather than the question, is mostly noise. Here the
summed window attention (last 32 positions, averaged over a KV head's query heads) first goes through a median
filter of width 5, which removes lone spikes but keeps runs of attended tokens, and only then through a max-pool
of width 3. The window itself and the first token are always kept. Builds on SnapKV and StreamingLLM.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _median_filter(x: torch.Tensor, width: int) -> torch.Tensor:
    padded = F.pad(x[:, None], (width // 2, width // 2), mode="replicate")[:, 0]
    return padded.unfold(1, width, 1).median(dim=-1).values


class MedianWindow(EvictionMethod):
    name = "median_window"
    query_window = 32
    median_width = 5
    pool = 3

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        attn = view.group(view.attention(reduce="sum"), "mean")
        smooth = _median_filter(attn, self.median_width)
        smooth = F.max_pool1d(smooth[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0]
        smooth = smooth.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        smooth[:, 0] = float("inf")
        return Keep.from_topk(smooth, view.budget, view.valid)
