"""Query-norm-weighted observation window (board B_online, query-agnostic prefill).

Query-agnostic SnapKV sums the attention rows of the closing window with equal weight. A query with a small norm
produces a flat softmax that says little about which token matters; a large-norm query is decisive. We weight each
row by its query's L2 norm, normalised over the window per query head, before summing; then mean over the KV head's
query heads, average-pool over 5, and keep four opening tokens plus the closing 16 positions.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the window score and StreamingLLM (Xiao et al., 2023,
arXiv 2309.17453) for the opening (sink) tokens. Weighting the rows by query norm is our change, and a small one.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView

N_SINK = 4
N_TAIL = 16


def row_weights(queries: torch.Tensor) -> torch.Tensor:
    """(H_q, N) weights, one per observation row, proportional to the query norm and summing to N per head."""
    norms = torch.linalg.vector_norm(queries.float(), dim=-1)
    return norms * norms.shape[1] / norms.sum(dim=1, keepdim=True).clamp_min(1e-6)


def pinned_mask(view: LayerView) -> torch.Tensor:
    last = view.query_positions.max()
    return (view.positions < N_SINK) | (view.positions > last - N_TAIL)


class NormWeightedWindow(EvictionMethod):
    name = "norm_weighted_window"
    query_window = 64
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, N, T)
        weighted = torch.einsum("hn,hnt->ht", row_weights(view.queries), attn)
        score = view.group(weighted, "mean")
        score = F.avg_pool1d(score.unsqueeze(1), self.kernel, stride=1, padding=self.kernel // 2,
                             count_include_pad=False).squeeze(1)
        score = torch.where(pinned_mask(view), torch.full_like(score, float("inf")), score)
        return Keep.from_topk(score, view.budget, view.valid)
