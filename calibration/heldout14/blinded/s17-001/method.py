"""Lead-in pooling (board B_online, query-agnostic).

Window-attention methods smooth their scores with a symmetric pooling kernel so that the neighbours of an
attended token survive with it. The neighbours that matter are not symmetric, though: the tokens that introduce
an attended token (the key of a key-value pair, the name before a number, the opening of a quoted span) precede
it. We pool asymmetrically: a token's score is the larger of its own window attention and 0.7 times the best
score among the next four tokens, and at least half the score of the token just before it. Four opening tokens and the closing window
are kept.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): window attention summed over the closing 32 rows, averaged
over the KV head's query heads. StreamingLLM's opening tokens are kept. The forward-looking pooling is ours.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class LeadInPooling(EvictionMethod):
    name = "lead_in_pooling"
    query_window = 32
    ahead = 4
    lead_weight = 0.7

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        s = s.masked_fill(~view.valid_mask(), 0.0)
        t = s.shape[1]
        padded = torch.cat([s, torch.zeros(s.shape[0], self.ahead)], dim=1)
        ahead = torch.stack([padded[:, i:i + t] for i in range(1, self.ahead + 1)], 0).amax(0)
        behind = torch.cat([torch.zeros(s.shape[0], 1), s[:, :-1]], dim=1)
        score = torch.maximum(torch.maximum(s, self.lead_weight * ahead), 0.5 * behind)
        fixed = view.positions >= int(view.query_positions.min())
        if int(fixed.sum(1).max()) > view.budget // 2:
            fixed = view.positions > int(view.positions.max()) - view.budget // 4
        fixed = fixed | (view.positions < min(4, view.budget // 8))
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
