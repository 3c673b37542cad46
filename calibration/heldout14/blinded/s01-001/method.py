"""Near/far agreement scoring (board B_online, query-agnostic).

SnapKV's closing window is a good proxy for what the context's end cares about, but on board B the questions
come later and may ask about anything; a token that only the last few rows like is a risky keep. We add a
second, far panel of rows: every 16th prompt row of the 512 rows before the window. Each panel's attention
(summed over its rows, averaged over the KV head's query heads) is normalised to its maximum, and a token's score
is the geometric mean of the two, so a token needs support from both the near and the far readers. Four opening
tokens and the closing window are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469) for window scoring and pooling and on StreamingLLM (Xiao
et al., 2023, arXiv 2309.17453) for the opening tokens. The far panel and the geometric-mean agreement are ours.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class NearFarAgreement(EvictionMethod):
    name = "near_far_agreement"
    query_window = 544
    near = 32
    stride = 16
    opening = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n = view.queries.shape[1]
        near = min(self.near, n)
        far_idx = torch.arange(0, n - near, self.stride)
        near_att = view.attention(view.queries[:, n - near:], reduce="sum")
        # far rows: pass them with their positions so that attention stays causal
        from harness.api import reference_attention
        if far_idx.numel():
            far_att = reference_attention(view.queries[:, far_idx], view.keys, view.positions,
                                          view.query_positions[far_idx], view.model.group_size, view.valid,
                                          scale=view.model.scale, reduce="sum")
        else:
            far_att = near_att
        a = view.group(near_att, "mean")
        b = view.group(far_att, "mean")
        a = a / a.amax(-1, keepdim=True).clamp_min(1e-12)
        b = b / b.amax(-1, keepdim=True).clamp_min(1e-12)
        score = (a * b).clamp_min(0).sqrt()
        score = F.max_pool1d(score[:, None], 5, stride=1, padding=2)[:, 0]
        fixed = view.positions >= int(view.query_positions[n - near:].min())
        if int(fixed.sum(1).max()) > view.budget // 2:
            fixed = view.positions > int(view.positions.max()) - view.budget // 4
        fixed = fixed | (view.positions < min(self.opening, view.budget // 8))
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
