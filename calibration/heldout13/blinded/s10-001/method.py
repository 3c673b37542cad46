"""Window attention with a local-novelty bonus (board B_online).

Query-agnostic SnapKV (the closing context window's attention) keeps what the end of the context reads, which
on retrieval prompts is mostly the last paragraphs. Inserted facts in a long filler text have one property the
window cannot see: they break the local pattern. We measure that directly: the local novelty of token t is
1 - max cosine between its key and the keys of the 8 tokens before it. The two signals are combined on the
percentile scale (no units to match):

    score_t = pct(window_t) + 0.5 * pct(novelty_t)

window: attention of the closing 32 context rows, summed, group mean, max-pooled 5. The four opening tokens and
the closing 32 tokens are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) in its query-agnostic form (as evaluated in KVzip, arXiv
2505.23416) and on StreamingLLM (arXiv 2309.17453) for the opening tokens. The local-novelty bonus is ours.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _percentile(x: torch.Tensor) -> torch.Tensor:
    order = x.argsort(dim=-1)
    r = torch.empty_like(order)
    r.scatter_(-1, order, torch.arange(x.shape[-1], device=x.device).expand_as(order))
    return r.float() / max(1, x.shape[-1] - 1)


class NoveltyBonus(EvictionMethod):
    name = "novelty_bonus"
    query_window = 32
    lookback = 8
    weight = 0.5
    opening = 4

    def _novelty(self, keys: torch.Tensor) -> torch.Tensor:
        u = keys.float() / keys.float().norm(dim=-1, keepdim=True).clamp_min(1e-6)  # (H, T, D)
        best = torch.full(u.shape[:2], -1.0, device=u.device)
        for lag in range(1, self.lookback + 1):
            if lag >= u.shape[1]:
                break
            sim = (u[:, lag:] * u[:, :-lag]).sum(dim=-1)
            best[:, lag:] = torch.maximum(best[:, lag:], sim)
        best[:, 0] = -1.0
        return 1.0 - best

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        win = view.group(view.attention(reduce="sum"), "mean")
        win = F.max_pool1d(win[:, None], 5, stride=1, padding=2)[:, 0]
        score = _percentile(win) + self.weight * _percentile(self._novelty(view.keys))
        start = view.query_positions.min()
        fixed = (view.positions >= start) | (view.positions < self.opening)
        score = score.masked_fill(fixed, float("inf"))
        return Keep.from_topk(score, view.budget)
