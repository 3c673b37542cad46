"""Question attention discounted by key redundancy (board A).

Each token's score is the attention the question span pays it (summed over the question's queries, averaged
over each KV head's query heads), multiplied by 1/sqrt(m), where m is the number of keys in the same head whose
cosine similarity with its key is above 0.9 (itself included). A passage repeated many times in the context
(filler, boilerplate) then spends fewer slots, and the slots go to tokens the question needs that have no
near-duplicate. The similarity counts are computed in row chunks (never T x T at once); the question span and
the first 4 tokens are always kept; scores are max-pooled over 3 tokens.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RedundancyDiscount(EvictionMethod):
    name = "redundancy_discount"
    question_queries = True
    query_window = 8
    threshold = 0.9
    rows = 1024
    sinks = 4

    def _multiplicity(self, keys: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        x = F.normalize(keys.float(), dim=-1) * valid[:, None]
        out = torch.empty(x.shape[0], device=x.device)
        for s in range(0, x.shape[0], self.rows):
            out[s:s + self.rows] = ((x[s:s + self.rows] @ x.t()) > self.threshold).sum(dim=1).float()
        return out.clamp_min(1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "mean")
        score = torch.stack([attn[h] / self._multiplicity(view.keys[h], valid[h]).sqrt()
                             for h in range(view.n_kv_heads)])
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        fixed = (view.positions >= int(view.query_positions.min())) | (view.positions < self.sinks)
        return Keep.from_topk(score.masked_fill(fixed, float("inf")), view.budget, view.valid)
