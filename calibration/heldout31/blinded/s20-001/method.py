"""Same Direction: question attention, credited by where each token's value points.

The question's rows give each token its attention (summed over the rows, causal). With those weights each query
head also has its current read-out, the attention-weighted mean of the values. A token whose value points the same
way as that read-out supports what the question is already assembling; one that points away mostly adds noise.
The score is attention x (1 + cos(value, read-out)) / 2, averaged over the group; the question span is kept.
Builds on SnapKV (question attention) and on VATP and CAOTE, which showed that values matter for the choice; using
the direction of the value against the read-out, rather than its norm or the output error, is the new part.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SameDirection(EvictionMethod):
    name = "same_direction"
    question_queries = True
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        attn = view.attention(reduce="sum")                                  # (H_q, T)
        vals = view.values.float().repeat_interleave(g, dim=0)               # (H_q, T, D)
        weight = attn / attn.sum(dim=-1, keepdim=True).clamp_min(1e-9)
        readout = torch.bmm(weight[:, None, :], vals)                        # (H_q, 1, D)
        agree = F.cosine_similarity(vals, readout, dim=-1)                   # (H_q, T)
        scores = view.group(attn * (1 + agree) / 2, "mean")
        scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
