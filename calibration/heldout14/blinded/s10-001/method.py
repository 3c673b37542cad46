"""Peak-and-mass rank fusion (board A).

Question attention can be summarised two ways: by mass (the sum over the question rows, what SnapKV uses) or by
peak (the largest single row's attention). Mass favours tokens that many question tokens look at a little;
peak favours the one token a single question word locks onto, often the needle itself. Rather than tuning a mix
of two differently scaled numbers, we fuse their rankings with reciprocal rank fusion,
score = 1/(60 + rank_mass) + 1/(60 + rank_peak), per KV head (query heads averaged). The question span and four
opening tokens are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for question/window scoring, reciprocal rank fusion (Cormack
et al., 2009) for combining rankings, and StreamingLLM's opening tokens. Fusing the peak and mass rankings of
question attention for eviction is, as far as we know, new, and a small change.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _ranks(x: torch.Tensor) -> torch.Tensor:
    order = x.argsort(dim=1, descending=True)
    r = torch.empty_like(order)
    r.scatter_(1, order, torch.arange(x.shape[1]).expand_as(order).contiguous())
    return r.float()


class PeakMassFusion(EvictionMethod):
    name = "peak_mass_fusion"
    query_window = 16
    question_queries = True
    k_rrf = 60.0

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        mass = view.group(view.attention(reduce="sum"), "mean").masked_fill(~valid, -1.0)
        peak = view.group(view.attention(reduce="max"), "mean").masked_fill(~valid, -1.0)
        score = 1.0 / (self.k_rrf + _ranks(mass)) + 1.0 / (self.k_rrf + _ranks(peak))
        fixed = view.positions >= int(view.query_positions.min())
        if int(fixed.sum(1).max()) > view.budget // 2:
            fixed = view.positions > int(view.positions.max()) - view.budget // 4
        fixed = fixed | ((view.positions >= 0) & (view.positions < min(4, view.budget // 8)))
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
