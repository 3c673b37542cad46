"""Focus-weighted question attention (board A).

SnapKV-style eviction averages the attention of a KV head's query heads. Within a GQA group some query heads
read the question sharply (a few keys take most of the mass) while others spread their attention almost
uniformly; averaging lets the diffuse heads blur the sharp ones. We weight each query head by how focused its
rows are: w = 1 - H(row) / log(n_visible), the normalised entropy averaged over the question rows, and sum the
attention with these weights inside the group.

    score_t = maxpool_5( sum_{h in group} w_h * sum_rows a_h[row, t] / sum_{h in group} w_h )

The question span plus the closing 24 prompt rows provide the rows. The closing 16 prompt tokens and four
opening tokens are always kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for the question/window scoring and pooling; sinks follow
StreamingLLM (Xiao et al., 2023, arXiv 2309.17453). The entropy weighting of query heads is our addition.
"""

import math

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class FocusWeighted(EvictionMethod):
    name = "focus_weighted"
    query_window = 24
    question_queries = True
    kernel = 5
    opening = 4
    closing = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, N, T)
        plogp = torch.where(attn > 0, attn * attn.clamp_min(1e-12).log(), torch.zeros_like(attn))
        ent = -plogp.sum(dim=-1)  # (H_q, N)
        seen = (attn > 0).sum(dim=-1).clamp_min(2).float()
        focus = (1.0 - ent / seen.log()).clamp(0.0, 1.0).mean(dim=1) + 1e-3  # (H_q,)
        mass = attn.sum(dim=1) * focus[:, None]
        g = view.model.group_size
        num = view.group(mass, "sum")
        den = view.group(focus[:, None], "sum")
        score = num / den
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        top = view.positions.max()
        fixed = (view.positions > top - self.closing) | (view.positions < self.opening)
        score = torch.where(fixed, torch.full_like(score, math.inf), score)
        del g
        return Keep.from_topk(score, view.budget, view.valid)
