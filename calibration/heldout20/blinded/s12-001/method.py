"""Attention-and-surprise rank fusion (board B_online, query-agnostic prefill).

Two query-free-ish signals disagree in useful ways. The context's last rows' attention (SnapKV's observation window)
finds what the end of the context still refers to; a token's *local surprise*, the distance of its key from the mean
of the 32 keys before it, finds where new content starts, which later questions often target and the window's
attention overlooks. Rather than adding scores on different scales, the two are fused by reciprocal-rank fusion per
KV head (k = 60, the usual constant from information retrieval). The window's own tokens and 4 opening tokens stay.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _ranks(score: torch.Tensor) -> torch.Tensor:
    """1-based rank per row, 1 = highest score."""
    order = score.argsort(dim=1, descending=True)
    r = torch.empty_like(order)
    r.scatter_(1, order, torch.arange(1, score.shape[1] + 1, device=score.device).expand_as(order))
    return r.float()


class AttentionSurpriseFusion(EvictionMethod):
    name = "attn_surprise_rrf"
    query_window = 32
    context_span = 32
    rrf_k = 60.0

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "mean")
        att = F.avg_pool1d(att[:, None], 5, stride=1, padding=2, count_include_pad=False)[:, 0]

        k = view.keys.float()                                       # (H, T, D)
        csum = F.pad(k.cumsum(dim=1), (0, 0, 1, 0))                 # (H, T+1, D)
        t = torch.arange(k.shape[1], device=k.device)
        lo = (t - self.context_span).clamp_min(0)
        count = (t - lo).clamp_min(1).view(1, -1, 1).float()
        prev_mean = (csum[:, t] - csum[:, lo]) / count
        surprise = (k - prev_mean).norm(dim=-1)
        surprise[:, 0] = 0.0

        fused = 1.0 / (self.rrf_k + _ranks(att)) + 1.0 / (self.rrf_k + _ranks(surprise))
        fused = fused.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        fused[:, :4] = float("inf")
        return Keep.from_topk(fused, view.budget, view.valid)
