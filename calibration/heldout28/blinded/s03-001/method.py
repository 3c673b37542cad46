"""Restless Tokens: keep what the closing rows look at, and what they disagree about.

The closing rows of the context read the cache; a token's standing is its average pull over those rows plus a
bonus for how unevenly the rows pull it (a token some rows want badly and others ignore is still in play).
The standing is blurred over a short neighbourhood and the closing rows themselves always stay.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def _blur(rows: torch.Tensor, width: int) -> torch.Tensor:
    """Box blur along the last axis with a ones kernel (same length out)."""
    kernel = torch.ones(1, 1, width, device=rows.device, dtype=rows.dtype) / width
    return F.conv1d(rows[:, None, :], kernel, padding=width // 2)[:, 0, :]


class RestlessTokens(EvictionMethod):
    name = "restless_tokens"
    query_window = 32
    unrest_gain = 6.0
    blur_width = 5

    def standing(self, view: LayerView) -> torch.Tensor:
        pulls = view.attention()  # (H_q, W, T)
        unrest, mean = torch.var_mean(pulls, dim=1, correction=0)
        standing = view.group(mean + self.unrest_gain * unrest, "mean")
        return _blur(standing, self.blur_width)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.standing(view)
        closing = view.positions >= view.query_positions.min()
        return Keep.from_topk(score.masked_fill(closing, float("inf")), view.budget, view.valid)
