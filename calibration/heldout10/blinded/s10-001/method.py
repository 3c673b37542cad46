"""Peak-or-breadth rank union over the repeat pass (board B_offline).

The repeat pass (the model re-reading its context, KVzip's idea) can be aggregated two ways, and they fail
differently: the peak (max over repeat queries) keeps tokens that one step of the reconstruction needs badly, the
breadth (sum over repeat queries) keeps tokens that many steps lean on a little, such as the subject of a long
passage. We score each token by the better of its two within-head rank percentiles, so a token that either
aggregation ranks highly is kept, with ties broken by the mean of the two. The first 4 tokens are always kept.

Builds on KVzip (Kim et al., 2025, arXiv 2505.23416): the repeat-pass queries and the max aggregation; H2O (Zhang et
al., 2023, arXiv 2306.14048): summed attention. The rank union is ours.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

SINKS = 4


def _pct(x: torch.Tensor) -> torch.Tensor:
    return x.argsort(-1).argsort(-1).float() / max(1, x.shape[-1] - 1)


class PeakOrBreadth(EvictionMethod):
    name = "peak_or_breadth"
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        peak = view.group(view.attention(reduce="max"), "max")             # (H_kv, T)
        breadth = view.group(view.attention(reduce="sum"), "mean")
        a, b = _pct(peak), _pct(breadth)
        score = torch.maximum(a, b) + 1e-3 * (a + b)
        score[:, :SINKS] = float("inf")
        return Keep.from_topk(score, view.budget)
