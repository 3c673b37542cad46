"""Forward spill: question attention that leaks forward along the context, never backward.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): tokens are ranked by the attention the question's queries
pay them, averaged over each KV head's query heads. SnapKV then smooths the scores with a symmetric pooling
window. Here the smoothing is one-sided: a token inherits a decaying share of the best score among the tokens
just before it (score'[t] = max(score[t], decay * score'[t-1])). The reasoning: when a question matches a key
("the special number for X is"), the tokens that carry the answer come right after the matched ones, and they
are rarely matched themselves. Keeping the forward run rather than both sides is in the spirit of ChunkKV's
contiguous chunks (Liu et al., 2025, arXiv 2502.00299), but the run length follows the score, not a fixed chunk.
The first four tokens (StreamingLLM's sinks, arXiv 2309.17453) and the question itself are always kept.
"""

import math

import torch

from harness.api import EvictionMethod, Keep, LayerView


def forward_leaky_max(score: torch.Tensor, decay: float) -> torch.Tensor:
    """out[t] = max_{j<=t} score[j] * decay**(t-j), along the last axis, computed in log space with cummax."""
    t = torch.arange(score.shape[-1], device=score.device, dtype=torch.float64)
    step = math.log(decay)
    logs = score.double().clamp_min(1e-30).log() - t * step
    return (logs.cummax(dim=-1).values + t * step).exp().float()


class ForwardSpill(EvictionMethod):
    name = "forward_spill"
    question_queries = True
    query_window = 8  # only used when no question is handed over
    decay = 0.7
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention(reduce="sum")  # (H_q, T), causal over the question span
        base = view.group(attn, "mean")
        spilled = forward_leaky_max(base, self.decay)
        first_query = int(view.query_positions.min())
        fixed = (view.positions >= first_query) | (view.positions < self.n_sink)
        return Keep.from_topk(spilled.masked_fill(fixed, float("inf")), view.budget, view.valid)
