"""Norm-debiased window attention (board B_online).

On board B the closing context queries stand in for questions that come later (SnapKV's observation window, Li et
al., 2024, arXiv 2404.14469, without the question). Their logits q.k mix two things: how well a key's direction
matches the window, and how long the key is. Key length is a property of the token, not of the match (K-norm,
Devoto et al., 2024, arXiv 2406.11430, shows how strongly it varies and how it relates to attention), and a future
question will weigh directions differently from the window. We keep the direction part and neutralise the length:
every key is rescaled to its head's median key norm before the window attends, so tokens compete on direction alone.

Window: the last 32 context queries, causal softmax at the model's scale over the rescaled keys, summed over the
window, averaged over the KV head's query heads, average-pooled over 5 tokens. The window and the first 4 tokens
(StreamingLLM, Xiao et al., 2023, arXiv 2309.17453) are always kept.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class NormDebiasedWindow(EvictionMethod):
    name = "norm_debiased_window"
    query_window = 32
    kernel = 5
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        k = view.keys.float()
        norms = k.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        valid = view.valid_mask()
        typical = torch.stack([norms[h, valid[h], 0].median() if bool(valid[h].any()) else norms.new_tensor(1.0)
                               for h in range(view.n_kv_heads)])
        even = k / norms * typical[:, None, None]
        att = reference_attention(view.queries, even, view.positions, view.query_positions, view.model.group_size,
                                  view.valid, scale=view.model.scale, reduce="sum")
        score = view.group(att, "mean")
        score = F.avg_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        first_q = int(view.query_positions.min())
        pinned = (view.positions < self.n_sink) | (view.positions >= first_q)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
