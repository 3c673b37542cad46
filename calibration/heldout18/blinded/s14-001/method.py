"""Two-scale agreement (board A).

Two readings of the same prompt end: the question rows alone (sharp, but few) and a wider closing window smoothed
over neighbours (robust, but diluted). A token is kept when both agree it matters: the score is the geometric mean
of the two max-normalised readings.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TwoScaleAgreement(EvictionMethod):
    name = "two_scale_agreement"
    query_window = 96
    question_queries = True
    narrow_rows = 16
    kernel = 5

    @staticmethod
    def _unit(x: torch.Tensor) -> torch.Tensor:
        lo = x.amin(dim=-1, keepdim=True)
        hi = x.amax(dim=-1, keepdim=True)
        return (x - lo) / (hi - lo).clamp_min(1e-12)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probs = view.attention()  # (H_q, N, T)
        narrow = view.group(probs[:, -self.narrow_rows:].sum(dim=1), "mean")
        wide = view.group(probs.mean(dim=1), "mean")
        wide = F.max_pool1d(wide[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        score = (self._unit(narrow) * self._unit(wide)).sqrt()
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
