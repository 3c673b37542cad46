"""Head-consensus percentiles (board B_online, query-agnostic prefill).

SnapKV-style window scoring (Li et al., 2024, arXiv 2404.14469) lets each KV head choose alone. On board B the window
is the context's own end, a noisy stand-in for the later questions, and each head's choice inherits that noise. We
let the other KV heads of the same layer have a small say: per head, the window attention (closing 64 context rows,
causal, summed, mean over the query heads) is turned into percentile ranks over the tokens; a token's score in head h
is 0.8 x its percentile in h + 0.2 x its mean percentile in the layer's other KV heads, average-pooled with width 5.
Percentiles, not raw attention, so a sharp head cannot dominate the consensus. The closing 64 rows are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _percentiles(score: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """(H, T) -> (H, T) in [0, 1]: 1 for the head's best real token, 0 for its worst; padding 0."""
    masked = score.masked_fill(~real, float("-inf"))
    order = masked.argsort(dim=-1)
    ranks = torch.empty_like(order)
    ranks.scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order))
    n_real = real.sum(dim=-1, keepdim=True)
    pad = score.shape[-1] - n_real
    pct = (ranks - pad).clamp_min(0).float() / (n_real - 1).clamp_min(1).float()
    return pct.masked_fill(~real, 0.0)


class HeadConsensus(EvictionMethod):
    name = "head_consensus"
    query_window = 64
    own = 0.8
    kernel = 5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(reduce="sum").float(), "mean")  # (H_kv, T)
        real = view.valid_mask()
        pct = _percentiles(attn, real)
        h = pct.shape[0]
        if h > 1:
            others = (pct.sum(dim=0, keepdim=True) - pct) / (h - 1)
            score = self.own * pct + (1.0 - self.own) * others
        else:
            score = pct
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2,
                             count_include_pad=False)[:, 0]
        window = view.positions >= view.query_positions.min()
        return Keep.from_topk(score.masked_fill(window, float("inf")), view.budget, view.valid)
